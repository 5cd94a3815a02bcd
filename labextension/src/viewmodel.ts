/**
 * Pure functions from the record (snapshots and comm messages) to what the sidebar
 * draws: totals, budget gauges, the step list in notebook order, timeline lanes and
 * the per-cell badges. No DOM and no JupyterLab imports, so they are unit-tested
 * directly (test/viewmodel.test.ts).
 */

import type {
  ExecutionStatus,
  IBudget,
  IExecution,
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
  /** Step rows by name, in first-seen order. */
  readonly steps: ReadonlyMap<string, IStepRow>;
  /** True once the kernel has spoken since the last reset: its word beats the disk's. */
  readonly live: boolean;
}

export function emptyState(): IRecordState {
  return {
    notebook: null,
    run: null,
    budget: null,
    sessions: [],
    executions: new Map(),
    steps: new Map(),
    live: false
  };
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
  const steps = new Map<string, IStepRow>();
  for (const row of snap.steps ?? []) {
    steps.set(row.step, row);
  }
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
    return {
      notebook: snap.notebook ?? state.notebook,
      run: snap.run ?? null,
      budget: snap.budget ?? null,
      sessions: mergeSessions(snap.sessions ?? [], executions),
      executions,
      steps,
      live: source === 'kernel' || (sameRun && state.live)
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
    executions
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
          live: true
        };
      }
      const executions = new Map(state.executions);
      mergeExecution(executions, e);
      return {
        ...state,
        run: state.run ?? (e.run ? { id: e.run, epoch: '', seed: 0, created: e.start } : null),
        sessions: addSession(state.sessions, e.session),
        executions,
        live: true
      };
    }
    case 'steps': {
      const steps = new Map<string, IStepRow>();
      for (const row of msg.steps ?? []) {
        steps.set(row.step, row);
      }
      return { ...state, steps, budget: msg.budget ?? state.budget, live: true };
    }
    default:
      return state;
  }
}

// ---------------------------------------------------------------------------
// Parsing step cells

const OPTIONS_WITH_VALUE = new Set(['--version', '--deps', '--ignore', '--dir', '--name']);

/** Split a magic line like a shell would (quotes, no escapes beyond quotes). */
export function splitArgs(line: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(line)) !== null) {
    out.push(m[1] ?? m[2] ?? m[3]);
  }
  return out;
}

export interface IStepCellInfo {
  /** The step's name when the magic line gives one, else null (the kernel derives it). */
  name: string | null;
  effect: boolean;
}

/** Parse a cell's source: null unless it starts with `%%step`. */
export function parseStepCell(source: string): IStepCellInfo | null {
  const text = source.replace(/^\s*\n/, '');
  const first = text.split('\n', 1)[0].trim();
  if (!/^%%step(\s|$)/.test(first)) {
    return null;
  }
  const args = splitArgs(first.slice('%%step'.length));
  let name: string | null = null;
  let effect = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--effect') {
      effect = true;
    } else if (a.startsWith('-')) {
      if (OPTIONS_WITH_VALUE.has(a)) {
        i++;
      }
    } else if (name === null) {
      name = a;
    }
  }
  return { name, effect };
}

/** Quote a step name for a `%step` line magic. */
export function quoteArg(name: string): string {
  return /^[\w.\-/:]+$/.test(name) ? name : `'${name.replace(/'/g, '')}'`;
}

// ---------------------------------------------------------------------------
// Formatting

export function formatDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) {
    return '–';
  }
  if (s < 0.001) {
    return '0 ms';
  }
  if (s < 1) {
    return `${Math.round(s * 1000)} ms`;
  }
  if (s < 60) {
    return `${s < 10 ? s.toFixed(2) : s.toFixed(1)} s`;
  }
  if (s < 3600) {
    const m = Math.floor(s / 60);
    return `${m} min ${Math.round(s - m * 60)} s`;
  }
  const h = Math.floor(s / 3600);
  return `${h} h ${Math.round((s - h * 3600) / 60)} min`;
}

export function formatCount(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '–';
  }
  if (Math.abs(n) >= 1e6) {
    return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  }
  if (Math.abs(n) >= 1e4) {
    return `${(n / 1e3).toFixed(n >= 1e5 ? 0 : 1)}k`;
  }
  return `${Math.round(n * 100) / 100}`;
}

export function formatCost(x: number | null | undefined): string {
  if (x === null || x === undefined || !Number.isFinite(x)) {
    return '–';
  }
  return `$${x < 10 ? x.toFixed(2) : x.toFixed(0)}`;
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '?';
  }
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function formatClock(t: number): string {
  const d = new Date(t * 1000);
  const pad = (x: number) => String(x).padStart(2, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** The word the UI shows for a status. */
export const STATUS_LABEL: Record<ExecutionStatus | 'none' | 'stale', string> = {
  running: 'running',
  hit: 'served',
  live: 'ran',
  effect: 'effect',
  error: 'error',
  interrupted: 'interrupted',
  refused: 'refused',
  stale: 'stale',
  none: 'not run'
};

// ---------------------------------------------------------------------------
// The view

export interface ICellInfo {
  /** The cell model's id (JupyterLab cell id). */
  id: string;
  source: string;
}

export interface IStepView {
  /** Unique key for rendering. */
  key: string;
  name: string;
  cellId: string | null;
  /** Index of the cell in the notebook, -1 when the step's cell is not there. */
  cellIndex: number;
  status: ExecutionStatus | 'none';
  durationS: number | null;
  savedS: number;
  stale: boolean;
  staleCause: string | null;
  reason: string | null;
  executions: number;
  effect: boolean;
  /** Text for the hover tooltip. */
  title: string;
}

export interface IGauge {
  name: 'steps' | 'tokens' | 'cost';
  used: number;
  limit: number | null;
  /** used / limit in [0, 1], null without a limit. */
  fraction: number | null;
  text: string;
}

export interface ITotals {
  steps: number;
  served: number;
  ran: number;
  effects: number;
  errors: number;
  running: number;
  savedS: number;
}

export interface IBar {
  id: string;
  step: string;
  cellId: string | null;
  status: ExecutionStatus;
  /** Left edge and width as fractions of the lane's width. */
  x: number;
  w: number;
  title: string;
}

export interface ILane {
  session: string;
  label: string;
  /** Wall time from the lane's first start to its last end. */
  wallS: number;
  bars: IBar[];
}

export interface IBadge {
  status: ExecutionStatus | 'stale';
  label: string;
  title: string;
}

export interface IRecordView {
  run: IRunInfo | null;
  totals: ITotals;
  gauges: IGauge[];
  rows: IStepView[];
  lanes: ILane[];
  /** Indices of the cells of stale steps, in notebook order. */
  staleCells: number[];
  /** Badge per cell id. */
  badges: Map<string, IBadge>;
  running: boolean;
}

function executionTitle(e: IExecution, status: ExecutionStatus, now: number): string {
  const lines = [`${e.step} — ${STATUS_LABEL[status]}`];
  const dur =
    status === 'running'
      ? Math.max(0, now - e.start)
      : (e.duration_s ?? (e.end !== null && e.end !== undefined ? e.end - e.start : null));
  lines.push(`started ${formatClock(e.start)}, ${formatDuration(dur)}`);
  if (status === 'hit' && e.saved_s) {
    lines.push(`saved ${formatDuration(e.saved_s)}${e.source ? ` (${e.source})` : ''}`);
  }
  if (e.reason) {
    lines.push(e.reason);
  }
  const values = (label: string, vs: IExecution['inputs']) => {
    if (vs && vs.length) {
      const shown = vs.slice(0, 6).map(v => `${v.name}: ${v.type} (${formatBytes(v.size)})`);
      lines.push(`${label}: ${shown.join(', ')}${vs.length > 6 ? ', …' : ''}`);
    }
  };
  values('in', e.inputs);
  values('out', e.outputs);
  return lines.join('\n');
}

/** Map [start, end] intervals onto [0, 1], shrinking idle gaps longer than `cap`. */
export function compressTime(
  intervals: ReadonlyArray<readonly [number, number]>,
  capFraction = 0.1
): { map: (t: number) => number; total: number } {
  if (intervals.length === 0) {
    return { map: () => 0, total: 0 };
  }
  const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [s, e] of sorted) {
    const last = merged[merged.length - 1];
    if (last && s <= last[1]) {
      last[1] = Math.max(last[1], e);
    } else {
      merged.push([s, Math.max(s, e)]);
    }
  }
  const busy = merged.reduce((acc, [s, e]) => acc + (e - s), 0);
  const cap = Math.max(busy * capFraction, 1e-3);
  // offsets[i]: compressed time at the start of merged[i]
  const offsets: number[] = [];
  let acc = 0;
  for (let i = 0; i < merged.length; i++) {
    if (i > 0) {
      acc += Math.min(merged[i][0] - merged[i - 1][1], cap);
    }
    offsets.push(acc);
    acc += merged[i][1] - merged[i][0];
  }
  const total = acc;
  const map = (t: number): number => {
    // binary search for the last interval starting at or before t
    let lo = 0;
    let hi = merged.length - 1;
    if (t <= merged[0][0]) {
      return 0;
    }
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (merged[mid][0] <= t) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const [s, e] = merged[lo];
    const within = Math.min(t, e) - s;
    const gap = t > e && lo + 1 < merged.length ? Math.min(t - e, cap) : t > e ? t - e : 0;
    return Math.min(offsets[lo] + within + gap, total);
  };
  return { map, total };
}

const BADGE_PRIORITY: Array<ExecutionStatus | 'stale'> = [
  'running',
  'error',
  'refused',
  'interrupted',
  'stale',
  'effect',
  'hit',
  'live'
];

/** Build everything the panel and the badges draw. `now` is Unix seconds. */
export function buildView(
  state: IRecordState,
  cells: readonly ICellInfo[],
  now: number
): IRecordView {
  const execs = [...state.executions.values()];
  execs.sort((a, b) => a.start - b.start);

  // The current session is the one of the latest execution: only its running
  // executions may still be running; older sessions' are shown as interrupted.
  const currentSession = execs.length ? execs[execs.length - 1].session : null;
  const effective = (e: IExecution): ExecutionStatus =>
    e.status === 'running' && e.session !== currentSession ? 'interrupted' : e.status;

  const latestByStep = new Map<string, IExecution>();
  const stepByCell = new Map<string, string>();
  const countByStep = new Map<string, number>();
  const totals: ITotals = {
    steps: 0,
    served: 0,
    ran: 0,
    effects: 0,
    errors: 0,
    running: 0,
    savedS: 0
  };
  for (const e of execs) {
    latestByStep.set(e.step, e);
    countByStep.set(e.step, (countByStep.get(e.step) ?? 0) + 1);
    if (e.cell_id) {
      stepByCell.set(e.cell_id, e.step);
    }
    switch (effective(e)) {
      case 'hit':
        totals.served++;
        totals.savedS += e.saved_s || 0;
        break;
      case 'live':
        totals.ran++;
        break;
      case 'effect':
        totals.effects++;
        break;
      case 'error':
        totals.errors++;
        break;
      case 'running':
        totals.running++;
        break;
    }
  }

  const makeRow = (
    name: string,
    cellId: string | null,
    cellIndex: number,
    effect: boolean
  ): IStepView => {
    const row = state.steps.get(name);
    const last = latestByStep.get(name);
    let status: ExecutionStatus | 'none' = 'none';
    if (last && (!row || row.last_start === null || last.start >= row.last_start)) {
      status = effective(last);
    } else if (row) {
      status = row.status;
    }
    const durationS =
      row?.duration_s ??
      (last && last.status !== 'hit' && last.status !== 'running' ? last.duration_s : null);
    const savedS = row?.saved_s ?? 0;
    const stale = row?.stale ?? false;
    const staleCause = row?.stale_cause ?? null;
    const reason = row?.reason ?? last?.reason ?? null;
    const executions = Math.max(row?.executions ?? 0, countByStep.get(name) ?? 0);
    const title = [
      `${name}: ${STATUS_LABEL[status]}`,
      durationS !== null ? `last run ${formatDuration(durationS)}` : null,
      savedS ? `saved ${formatDuration(savedS)}` : null,
      stale ? `stale: ${staleCause ?? 'an input changed'}` : null,
      reason ? `why: ${reason}` : null,
      `${executions} execution${executions === 1 ? '' : 's'}`,
      cellIndex < 0 ? 'its cell is not in this notebook' : null
    ]
      .filter(Boolean)
      .join('\n');
    return {
      key: `${name}\u0000${cellId ?? ''}\u0000${cellIndex}`,
      name,
      cellId: cellId ?? row?.cell_id ?? last?.cell_id ?? null,
      cellIndex,
      status,
      durationS: durationS ?? null,
      savedS,
      stale,
      staleCause,
      reason,
      executions,
      effect: effect || last?.status === 'effect',
      title
    };
  };

  const rows: IStepView[] = [];
  const seen = new Set<string>();
  cells.forEach((cell, index) => {
    const info = parseStepCell(cell.source);
    if (!info) {
      return;
    }
    const name = info.name ?? stepByCell.get(cell.id) ?? null;
    if (name === null) {
      rows.push({
        ...makeRow(`cell ${index + 1}`, cell.id, index, info.effect),
        status: 'none',
        executions: 0,
        title: 'unnamed step: the kernel names it when it runs'
      });
      return;
    }
    seen.add(name);
    rows.push(makeRow(name, cell.id, index, info.effect));
  });
  const orphans: string[] = [];
  for (const name of state.steps.keys()) {
    if (!seen.has(name)) {
      orphans.push(name);
      seen.add(name);
    }
  }
  for (const name of latestByStep.keys()) {
    if (!seen.has(name)) {
      orphans.push(name);
      seen.add(name);
    }
  }
  for (const name of orphans) {
    rows.push(makeRow(name, null, -1, false));
  }
  totals.steps = rows.length;

  // Badges, by cell id
  const badges = new Map<string, IBadge>();
  const staleCells: number[] = [];
  for (const row of rows) {
    if (row.cellIndex < 0 || !row.cellId) {
      continue;
    }
    if (row.stale) {
      staleCells.push(row.cellIndex);
    }
    const candidates: Array<ExecutionStatus | 'stale'> = [];
    if (row.status !== 'none') {
      candidates.push(row.status);
    }
    if (row.stale) {
      candidates.push('stale');
    }
    if (!candidates.length) {
      continue;
    }
    candidates.sort((a, b) => BADGE_PRIORITY.indexOf(a) - BADGE_PRIORITY.indexOf(b));
    const status = candidates[0];
    badges.set(row.cellId, { status, label: STATUS_LABEL[status], title: row.title });
  }

  // Lanes
  const bySession = new Map<string, IExecution[]>();
  for (const s of state.sessions) {
    bySession.set(s, []);
  }
  for (const e of execs) {
    let list = bySession.get(e.session);
    if (!list) {
      list = [];
      bySession.set(e.session, list);
    }
    list.push(e);
  }
  const lanes: ILane[] = [];
  let laneNo = 0;
  for (const [session, list] of bySession) {
    if (!list.length) {
      continue;
    }
    laneNo++;
    const endOf = (e: IExecution): number => {
      const st = effective(e);
      if (e.end !== null && e.end !== undefined) {
        return Math.max(e.end, e.start);
      }
      if (st === 'running') {
        return Math.max(now, e.start);
      }
      return e.start + (e.duration_s ?? 0);
    };
    const intervals = list.map(e => [e.start, endOf(e)] as const);
    const { map, total } = compressTime(intervals);
    const first = list[0].start;
    const last = Math.max(...intervals.map(i => i[1]));
    const bars: IBar[] = list.map((e, i) => {
      const st = effective(e);
      let x: number;
      let w: number;
      if (total > 0) {
        x = map(intervals[i][0]) / total;
        w = (map(intervals[i][1]) - map(intervals[i][0])) / total;
      } else {
        x = i / list.length;
        w = 0;
      }
      return {
        id: e.id,
        step: e.step,
        cellId: e.cell_id,
        status: st,
        x,
        w,
        title: executionTitle(e, st, now)
      };
    });
    const wallS = last - first;
    lanes.push({
      session,
      label: `session ${laneNo} · ${formatClock(first)} · ${list.length} exec · ${formatDuration(wallS)}`,
      wallS,
      bars
    });
  }

  // Budget gauges
  const gauges: IGauge[] = [];
  const b = state.budget;
  if (b) {
    const mk = (name: IGauge['name'], fmt: (x: number) => string): IGauge => {
      const used = b.spent?.[name] ?? 0;
      const limit = b.limits?.[name] ?? null;
      const fraction = limit ? Math.min(1, used / limit) : limit === 0 ? 1 : null;
      return {
        name,
        used,
        limit,
        fraction,
        text: limit === null ? `${fmt(used)} (no limit)` : `${fmt(used)} of ${fmt(limit)}`
      };
    };
    gauges.push(mk('steps', formatCount), mk('tokens', formatCount), mk('cost', formatCost));
  }

  return {
    run: state.run,
    totals,
    gauges,
    rows,
    lanes,
    staleCells,
    badges,
    running: totals.running > 0
  };
}
