/**
 * The record of one notebook's run as the sidebar knows it, merged from the server
 * route's snapshots and the kernel's comm messages. Pure functions, unit-tested in
 * test/viewmodel.test.ts.
 */

import type {
  IBudget,
  ICacheFigures,
  IExecution,
  IPlanAnswer,
  IRestored,
  IRunInfo,
  ISnapshot,
  IStepRow,
  KernelMessage
} from './protocol';

// ---------------------------------------------------------------------------
// State

/** Everything known about one notebook's run, merged from the route and the comm. */
export interface IRecordState {
  readonly notebook: string | null;
  readonly run: IRunInfo | null;
  readonly budget: IBudget | null;
  readonly sessions: readonly string[];
  /** Executions by id, in arrival order. */
  readonly executions: ReadonlyMap<string, IExecution>;
  /** Rows (a step in a cell) by `rowKey`, in first-seen order. */
  readonly steps: ReadonlyMap<string, IStepRow>;
  /** The session of the kernel that is connected now, once it has said so. */
  readonly kernelSession: string | null;
  /** True once the kernel has spoken since the last reset: its word beats the disk's. */
  readonly live: boolean;
  /** The store's figures (and the team cache's, from the kernel), when known. */
  readonly cache: ICacheFigures | null;
  /** The answer to the last Restore session of this kernel session. */
  readonly restored: IRestored | null;
  /** The kernel's last answer to "which cells are out of date" (Run stale); null until
   * it answered, and again when the kernel changes. */
  readonly plan: IPlanAnswer | null;
}

export function emptyState(): IRecordState {
  return {
    notebook: null,
    run: null,
    budget: null,
    sessions: [],
    executions: new Map(),
    steps: new Map(),
    kernelSession: null,
    live: false,
    cache: null,
    restored: null,
    plan: null
  };
}

/** The store's figures from `incoming`; the team cache's and the pending writes' from
 * it when it has them (the server knows neither). */
function mergeCache(
  known: ICacheFigures | null,
  incoming: ICacheFigures | null | undefined
): ICacheFigures | null {
  if (!incoming) {
    return known;
  }
  const team = incoming.team === undefined ? (known?.team ?? null) : incoming.team;
  const writing = incoming.writing === undefined ? (known?.writing ?? null) : incoming.writing;
  return { store: incoming.store ?? known?.store ?? null, team, writing };
}

/** The key of a row: one step in one cell. */
export function rowKey(step: string, cellId: string | null | undefined): string {
  return `${step}\u0000${cellId ?? ''}`;
}

function rowMap(rows: readonly IStepRow[] | undefined): Map<string, IStepRow> {
  const out = new Map<string, IStepRow>();
  for (const row of rows ?? []) {
    out.set(rowKey(row.step, row.cell_id), row);
  }
  return out;
}

/** Where a snapshot came from: the server route (disk) or the kernel's comm. */
export type SnapshotSource = 'server' | 'kernel';

function isFinal(e: IExecution): boolean {
  return e.status !== 'running';
}

function mergeExecution(map: Map<string, IExecution>, incoming: IExecution): void {
  const known = map.get(incoming.id);
  // A final state never goes back to running (a stale snapshot can lag the comm).
  if (known && isFinal(known) && !isFinal(incoming)) {
    return;
  }
  map.set(incoming.id, incoming);
}

function addSession(sessions: readonly string[], session: string): string[] {
  return sessions.includes(session) ? [...sessions] : [...sessions, session];
}

/**
 * Apply a snapshot. The kernel's snapshot replaces the state (it follows a clear or a
 * new run). The server's is merged: executions by id, and its step rows and budget are
 * taken only while the kernel has not spoken since the last reset.
 */
export function applySnapshot(
  state: IRecordState,
  snap: ISnapshot,
  source: SnapshotSource
): IRecordState {
  if (source === 'server' && !snap.run && state.run) {
    // The disk has no run where we know one: a rename whose record is still being
    // carried over, or a store that went away. What we know stays until the kernel says.
    return state;
  }
  const steps = rowMap(snap.steps);
  const sameRun = (state.run?.id ?? null) === (snap.run?.id ?? null);
  if (source === 'kernel' || !sameRun || !state.live) {
    const executions = new Map<string, IExecution>();
    if (source === 'server' && sameRun) {
      for (const e of state.executions.values()) {
        executions.set(e.id, e);
      }
    }
    for (const e of snap.executions ?? []) {
      mergeExecution(executions, e);
    }
    const kernelSession = source === 'kernel' ? (snap.session ?? null) : state.kernelSession;
    return {
      notebook: snap.notebook ?? state.notebook,
      run: snap.run ?? null,
      budget: snap.budget ?? null,
      sessions: mergeSessions(snap.sessions ?? [], executions),
      executions,
      steps,
      kernelSession,
      live: source === 'kernel' || (sameRun && state.live),
      cache: mergeCache(state.cache, snap.cache),
      // what a restore said holds for the kernel session it restored
      restored: kernelSession === state.kernelSession ? state.restored : null,
      plan: kernelSession === state.kernelSession ? state.plan : null
    };
  }
  // Server snapshot of the same run while the kernel is live: only add what we lack.
  const executions = new Map(state.executions);
  for (const e of snap.executions ?? []) {
    if (!executions.has(e.id)) {
      executions.set(e.id, e);
    }
  }
  return {
    ...state,
    notebook: snap.notebook ?? state.notebook,
    sessions: mergeSessions([...state.sessions, ...(snap.sessions ?? [])], executions),
    executions,
    cache: mergeCache(state.cache, snap.cache)
  };
}

function mergeSessions(
  sessions: readonly string[],
  executions: ReadonlyMap<string, IExecution>
): string[] {
  const out: string[] = [];
  for (const s of sessions) {
    if (!out.includes(s)) {
      out.push(s);
    }
  }
  for (const e of executions.values()) {
    if (e.session && !out.includes(e.session)) {
      out.push(e.session);
    }
  }
  return out;
}

/** Apply one message from the kernel's comm. Unknown messages leave the state as is. */
export function applyMessage(state: IRecordState, msg: KernelMessage): IRecordState {
  switch (msg?.type) {
    case 'snapshot':
      return applySnapshot(state, msg, 'kernel');
    case 'execution': {
      const e = msg.execution;
      if (!e || !e.id) {
        return state;
      }
      if (state.run && e.run && e.run !== state.run.id) {
        // An execution of another run: the kernel started a new run.
        return {
          ...emptyState(),
          notebook: state.notebook,
          run: { id: e.run, epoch: '', seed: 0, created: e.start },
          sessions: [e.session],
          executions: new Map([[e.id, e]]),
          kernelSession: e.session,
          live: true,
          cache: state.cache,
          restored: null
        };
      }
      const executions = new Map(state.executions);
      mergeExecution(executions, e);
      return {
        ...state,
        run: state.run ?? (e.run ? { id: e.run, epoch: '', seed: 0, created: e.start } : null),
        sessions: addSession(state.sessions, e.session),
        executions,
        kernelSession: e.session,
        live: true
      };
    }
    case 'steps': {
      return {
        ...state,
        steps: rowMap(msg.steps),
        budget: msg.budget ?? state.budget,
        cache: mergeCache(state.cache, msg.cache),
        live: true
      };
    }
    case 'cache':
      // An entry written behind was stored or given up.
      return { ...state, cache: mergeCache(state.cache, msg.cache) };
    case 'restored': {
      const { type: _type, ...restored } = msg;
      return { ...state, restored };
    }
    case 'plan': {
      const { type: _type, ...plan } = msg;
      return { ...state, plan };
    }
    default:
      return state;
  }
}
