/**
 * Pure functions from the record (snapshots and comm messages) to what the sidebar
 * draws: totals, budget gauges, the rows in notebook order (one per step per cell),
 * timeline lanes and the per-cell badges. No DOM and no JupyterLab imports, so they are
 * unit-tested directly (test/viewmodel.test.ts).
 */

import {
  formatAge,
  formatBytes,
  formatClock,
  formatCost,
  formatCount,
  formatDuration
} from './format';
import { cacheView, ICacheView } from './glance';
import { AGE_SHOWN_AFTER_S, STATUS_WORD } from './palette';
import { provenanceSentence, teamLine } from './provenance';
import type {
  ExecutionStatus,
  IBudget,
  IExecution,
  IPlanAnswer,
  IRestored,
  IRunInfo,
  IStepRow
} from './protocol';
import { IRecordState, rowKey } from './state';
import { parseStepCell } from './stepline';
import { busySeconds, laneAxes } from './timeaxis';

export { formatDuration, middleEllipsis } from './format';
export { applyMessage, applySnapshot, emptyState, rowKey } from './state';
export type { IRecordState, SnapshotSource } from './state';
export { parseStepCell, quoteArg, splitArgs } from './stepline';

// ---------------------------------------------------------------------------
// The view

/** The word the UI shows for a status (from the one palette). */
export const STATUS_LABEL: Record<ExecutionStatus | 'none' | 'stale', string> = {
  running: STATUS_WORD.running,
  hit: STATUS_WORD.hit,
  live: STATUS_WORD.live,
  effect: STATUS_WORD.effect,
  error: STATUS_WORD.error,
  interrupted: STATUS_WORD.interrupted,
  refused: STATUS_WORD.refused,
  stale: STATUS_WORD.stale,
  none: STATUS_WORD.none
};

export interface ICellInfo {
  /** The cell model's id (JupyterLab cell id). */
  id: string;
  source: string;
}

/** One row: a step in a cell (or, at the end, a step whose cell is not here). */
export interface IStepView {
  key: string;
  name: string;
  cellId: string | null;
  /** Index of the cell in the notebook, -1 when the step's cell is not there. */
  cellIndex: number;
  status: ExecutionStatus | 'none';
  /** Duration of the row's last live run. */
  durationS: number | null;
  /** Time saved by the row's hits, whole run. */
  savedS: number;
  stale: boolean;
  staleCause: string | null;
  reason: string | null;
  /** When the value its last execution left was computed, and how long ago that is
   * (`3 days ago`) when it is more than a few minutes, else null. */
  computed: number | null;
  age: string | null;
  /** Who computed its value, from what and (a hit) where it was served from, or null. */
  provenance: string | null;
  /** A hit from the team cache: who computed it and where it came from, for a line of
   * its own under the row (else null). */
  teamLine: string | null;
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

/** Executions by outcome and the time their hits saved. */
export interface ICounts {
  served: number;
  ran: number;
  effects: number;
  errors: number;
  running: number;
  savedS: number;
}

export interface ITotals {
  /** Rows in this notebook, and how many are stale. */
  steps: number;
  stale: number;
  /** This kernel session's executions, and the whole run's (all sessions). */
  session: ICounts;
  run: ICounts;
}

export interface IBar {
  id: string;
  step: string;
  cellId: string | null;
  status: ExecutionStatus;
  /** Left edge and width as fractions of the common time axis. */
  x: number;
  w: number;
  title: string;
}

export interface ILane {
  session: string;
  /** `session 2`, and `13 executions · 0.70 s busy`; `title` says when it started. */
  label: string;
  detail: string;
  title: string;
  /** Seconds some execution of the lane was running (idle time not counted). */
  busyS: number;
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
  /** The run's hit rate and the store's figures. */
  cache: ICacheView;
  gauges: IGauge[];
  rows: IStepView[];
  lanes: ILane[];
  /** Indices of the cells Run stale runs, in notebook order, each once: the kernel's
   * plan when it answered (unsaved edits of plain cells included), else the stale rows. */
  staleCells: number[];
  /** Why the kernel has no plan (a bad %%step line), else null. */
  planError: string | null;
  /** Badge per cell id. */
  badges: Map<string, IBadge>;
  running: boolean;
  /** What Restore session would bring back, offered while this kernel session has run
   * nothing yet and an earlier one ran steps; null otherwise. */
  restore: IRestoreOffer | null;
  /** What the last Restore session of this kernel session said. */
  restored: IRestored | null;
}

export interface IRestoreOffer {
  /** `4 cells, 1.2 MiB, ~20 ms`: what Restore session would bring back */
  what: string;
  title: string;
  executions: number;
}

/** A hit costs its entry and replay, not its bytes (values are read lazily). */
const RESTORE_S_PER_EXECUTION = 0.005;
const RESTORED_STATUSES = new Set(['hit', 'live', 'effect']);

/** The executions of the latest session before the current one that made its state,
 * as `%step restore` takes them (resumable_cells/ipython/restore.py). */
function restoreOffer(execs: IExecution[], currentSession: string | null): IRestoreOffer | null {
  if (currentSession === null || execs.some(e => e.session === currentSession)) {
    return null;
  }
  const earlier = execs.filter(e => e.session !== currentSession);
  if (!earlier.length) {
    return null;
  }
  const session = earlier[earlier.length - 1].session;
  const made = earlier.filter(e => e.session === session && RESTORED_STATUSES.has(e.status));
  if (!made.length) {
    return null;
  }
  const cells = new Set(made.map(e => `${e.cell_id ?? ''}\u0000${e.step}`)).size;
  const bytes = made.reduce(
    (sum, e) => sum + (e.outputs ?? []).reduce((s, o) => s + (o.size ?? 0), 0),
    0
  );
  const time = formatDuration(RESTORE_S_PER_EXECUTION * made.length);
  return {
    what: `${cells} ${cells === 1 ? 'cell' : 'cells'}, ${formatBytes(bytes)}, ~${time}`,
    title:
      `Serve again, in the order they ran, the ${made.length} executions of the last ` +
      'kernel session, each as it was (%step restore); it stops at the first that cannot ' +
      'be served (an effect, a cell edited since it ran) and says why',
    executions: made.length
  };
}

function executionTitle(e: IExecution, status: ExecutionStatus, now: number): string {
  const lines = [`${e.step} — ${STATUS_LABEL[status]}`];
  const dur =
    status === 'running'
      ? Math.max(0, now - e.start)
      : (e.duration_s ?? (e.end !== null && e.end !== undefined ? e.end - e.start : null));
  const prompt = e.execution_count ? ` as In [${e.execution_count}]` : '';
  lines.push(`started ${formatClock(e.start)}${prompt}, took ${formatDuration(dur)}`);
  if (status === 'hit' && e.saved_s) {
    lines.push(`saved ${formatDuration(e.saved_s)}${e.source ? ` (${e.source})` : ''}`);
  }
  if (status === 'hit' && e.computed) {
    lines.push(`computed ${formatAge(e.start - e.computed)} before it was served`);
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

const BADGE_PRIORITY: Array<ExecutionStatus | 'stale'> = [
  'running',
  'error',
  'refused',
  'interrupted',
  'stale',
  'live',
  'effect',
  'hit'
];

/** Append to the list under `key` (in place: views of 5,000 executions are built often). */
function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) {
    list.push(value);
  } else {
    map.set(key, [value]);
  }
}

function emptyCounts(): ICounts {
  return { served: 0, ran: 0, effects: 0, errors: 0, running: 0, savedS: 0 };
}

function count(c: ICounts, status: ExecutionStatus, e: IExecution): void {
  switch (status) {
    case 'hit':
      c.served++;
      c.savedS += e.saved_s || 0;
      break;
    case 'live':
      c.ran++;
      break;
    case 'effect':
      c.effects++;
      break;
    case 'error':
      c.errors++;
      break;
    case 'running':
      c.running++;
      break;
  }
}

/** What is known of one row: the kernel's (or disk's) row and the latest execution. */
interface IRowSource {
  name: string;
  cellId: string | null;
  row: IStepRow | undefined;
  last: IExecution | undefined;
  count: number;
}

/** `3 days ago` when `computed` is more than a few minutes before `now`, else null. */
export function ageText(computed: number | null | undefined, now: number): string | null {
  if (!computed || now - computed <= AGE_SHOWN_AFTER_S) {
    return null;
  }
  return `${formatAge(now - computed)} ago`;
}

function makeRow(
  src: IRowSource,
  cellIndex: number,
  effect: boolean,
  effective: (e: IExecution) => ExecutionStatus,
  now: number
): IStepView {
  const { name, row, last } = src;
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
  const executions = Math.max(row?.executions ?? 0, src.count);
  const prompt = last?.execution_count ?? row?.execution_count;
  const fromLast = last && last.status !== 'running' && status === effective(last);
  // a live run's value is as old as its end (records older than `computed` say no more)
  const ranLive = last?.status === 'live' || last?.status === 'effect';
  const computed =
    (fromLast ? (last.computed ?? (ranLive ? last.end : null)) : row?.computed) ?? null;
  const age = ageText(computed, now);
  const origin = (fromLast ? last.provenance : row?.provenance) ?? null;
  const provenance = origin ? provenanceSentence(origin, now) : null;
  const title = [
    `${name}: ${STATUS_LABEL[status]}${prompt ? ` (last as In [${prompt}])` : ''}`,
    durationS !== null ? `last run took ${formatDuration(durationS)}` : null,
    savedS ? `cache hits of this cell saved ${formatDuration(savedS)} in this run` : null,
    age ? `its value was computed ${age}` : null,
    provenance,
    stale ? `stale: ${staleCause ?? 'an input changed'}` : null,
    reason ? `why: ${reason}` : null,
    `${executions} execution${executions === 1 ? '' : 's'}`,
    cellIndex < 0 ? 'its cell is not in this notebook' : null
  ]
    .filter(Boolean)
    .join('\n');
  return {
    key: rowKey(name, src.cellId) + `\u0000${cellIndex}`,
    name,
    cellId: src.cellId,
    cellIndex,
    status,
    durationS: durationS ?? null,
    savedS,
    stale,
    staleCause,
    reason,
    computed,
    age,
    provenance,
    teamLine: status === 'hit' && origin ? teamLine(origin) : null,
    executions,
    effect: effect || last?.status === 'effect',
    title
  };
}

/** What the executions say, by row: the latest of each, how many, the totals. */
interface IIndex {
  latest: Map<string, IExecution>;
  counts: Map<string, number>;
  keysByCell: Map<string, string[]>; // cell id -> row keys, first seen
  names: Map<string, string>; // row key -> step name
  session: ICounts;
  run: ICounts;
}

function indexRecord(
  state: IRecordState,
  execs: IExecution[],
  effective: (e: IExecution) => ExecutionStatus,
  currentSession: string | null
): IIndex {
  const ix: IIndex = {
    latest: new Map(),
    counts: new Map(),
    keysByCell: new Map(),
    names: new Map(),
    session: emptyCounts(),
    run: emptyCounts()
  };
  const note = (key: string, name: string, cellId: string | null) => {
    if (!ix.names.has(key)) {
      ix.names.set(key, name);
      if (cellId) {
        push(ix.keysByCell, cellId, key);
      }
    }
  };
  for (const e of execs) {
    const key = rowKey(e.step, e.cell_id);
    ix.latest.set(key, e);
    ix.counts.set(key, (ix.counts.get(key) ?? 0) + 1);
    note(key, e.step, e.cell_id);
    const st = effective(e);
    count(ix.run, st, e);
    if (e.session === currentSession) {
      count(ix.session, st, e);
    }
  }
  for (const [key, row] of state.steps) {
    note(key, row.step, row.cell_id);
  }
  return ix;
}

/** The rows in notebook order: a row per %%step cell, a row per step of a plain cell
 * that ran steps (a loop calling run_cell_magic), then steps whose cell is not here. */
function notebookRows(
  state: IRecordState,
  ix: IIndex,
  cells: readonly ICellInfo[],
  effective: (e: IExecution) => ExecutionStatus,
  now: number
): IStepView[] {
  const source = (key: string, name: string, cellId: string | null): IRowSource => ({
    name,
    cellId,
    row: state.steps.get(key),
    last: ix.latest.get(key),
    count: ix.counts.get(key) ?? 0
  });
  const rows: IStepView[] = [];
  const used = new Set<string>();
  const cellNames = new Set<string>(); // rows recorded without cell ids fold into these
  cells.forEach((cell, index) => {
    const info = parseStepCell(cell.source);
    const own = ix.keysByCell.get(cell.id) ?? [];
    if (!info) {
      for (const key of own) {
        used.add(key);
        rows.push(makeRow(source(key, ix.names.get(key)!, cell.id), index, false, effective, now));
      }
      return;
    }
    const name = info.name ?? (own.length ? ix.names.get(own[own.length - 1])! : null);
    if (name === null) {
      rows.push({
        ...makeRow(source('', `cell ${index + 1}`, cell.id), index, info.effect, effective, now),
        title: info.error
          ? `the %%step line is refused by the magic: ${info.error}`
          : 'unnamed step: the kernel names it when it runs'
      });
      return;
    }
    cellNames.add(name);
    let key = rowKey(name, cell.id);
    if (!ix.names.has(key) && ix.names.has(rowKey(name, null))) {
      key = rowKey(name, null); // recorded without cell ids (nbconvert, papermill)
    }
    used.add(key);
    rows.push(makeRow(source(key, name, cell.id), index, info.effect, effective, now));
  });
  const inNotebook = new Set(cells.map(c => c.id));
  for (const [key, name] of ix.names) {
    const cellId = state.steps.get(key)?.cell_id ?? ix.latest.get(key)?.cell_id ?? null;
    const known = cellId === null ? cellNames.has(name) : inNotebook.has(cellId);
    if (!used.has(key) && !known) {
      rows.push(makeRow(source(key, name, cellId), -1, false, effective, now));
    }
  }
  return rows;
}

/** Build everything the panel and the badges draw. `now` is Unix seconds. */
export function buildView(
  state: IRecordState,
  cells: readonly ICellInfo[],
  now: number
): IRecordView {
  const execs = [...state.executions.values()];
  execs.sort((a, b) => a.start - b.start);
  // Only the current session's executions may still be running.
  const currentSession =
    state.kernelSession ?? (execs.length ? execs[execs.length - 1].session : null);
  const effective = (e: IExecution): ExecutionStatus =>
    e.status === 'running' && e.session !== currentSession ? 'interrupted' : e.status;
  const ix = indexRecord(state, execs, effective, currentSession);
  const rows = notebookRows(state, ix, cells, effective, now);
  const { badges, staleCells } = cellBadges(rows);
  return {
    run: state.run,
    totals: {
      steps: rows.filter(r => r.cellIndex >= 0).length,
      stale: rows.filter(r => r.stale).length,
      session: ix.session,
      run: ix.run
    },
    cache: cacheView(state.cache, ix.run),
    gauges: gauges(state.budget),
    rows,
    lanes: lanes(state, execs, effective, now),
    staleCells: state.plan ? planCells(state.plan, cells) : staleCells,
    planError: state.plan?.error ?? null,
    badges,
    running: ix.run.running > 0,
    restore: state.live ? restoreOffer(execs, currentSession) : null,
    restored: state.restored
  };
}

/** The indices of the cells the kernel's plan names, as the notebook holds them now. */
function planCells(plan: IPlanAnswer, cells: readonly ICellInfo[]): number[] {
  const wanted = new Set(plan.run);
  const out: number[] = [];
  cells.forEach((c, i) => {
    if (wanted.has(c.id)) {
      out.push(i);
    }
  });
  return out;
}

/** A badge per cell: the most telling status of its rows (running, error, ..., served). */
function cellBadges(rows: IStepView[]): { badges: Map<string, IBadge>; staleCells: number[] } {
  const byCell = new Map<string, IStepView[]>();
  const staleCells: number[] = [];
  for (const row of rows) {
    if (row.cellIndex < 0 || !row.cellId) {
      continue;
    }
    push(byCell, row.cellId, row);
    if (row.stale && !staleCells.includes(row.cellIndex)) {
      staleCells.push(row.cellIndex);
    }
  }
  const badges = new Map<string, IBadge>();
  for (const [cellId, cellRows] of byCell) {
    const candidates: Array<{ status: ExecutionStatus | 'stale'; row: IStepView }> = [];
    for (const row of cellRows) {
      if (row.status !== 'none') {
        candidates.push({ status: row.status, row });
      }
      if (row.stale) {
        candidates.push({ status: 'stale', row });
      }
    }
    if (!candidates.length) {
      continue;
    }
    candidates.sort((a, b) => BADGE_PRIORITY.indexOf(a.status) - BADGE_PRIORITY.indexOf(b.status));
    const { status, row } = candidates[0];
    const title =
      cellRows.length === 1 ? row.title : `${cellRows.length} steps in this cell\n${row.title}`;
    badges.set(cellId, { status, label: STATUS_LABEL[status], title });
  }
  staleCells.sort((a, b) => a - b);
  return { badges, staleCells };
}

function gauges(b: IBudget | null): IGauge[] {
  if (!b) {
    return [];
  }
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
  return [mk('steps', formatCount), mk('tokens', formatCount), mk('cost', formatCost)];
}

/** A lane per kernel session, all on one time scale (timeaxis.ts). */
function lanes(
  state: IRecordState,
  execs: IExecution[],
  effective: (e: IExecution) => ExecutionStatus,
  now: number
): ILane[] {
  const bySession = new Map<string, IExecution[]>();
  for (const s of state.sessions) {
    bySession.set(s, []);
  }
  for (const e of execs) {
    push(bySession, e.session, e);
  }
  const endOf = (e: IExecution): number => {
    if (e.end !== null && e.end !== undefined) {
      return Math.max(e.end, e.start);
    }
    if (effective(e) === 'running') {
      return Math.max(now, e.start);
    }
    return e.start + (e.duration_s ?? 0);
  };
  const sessions = [...bySession].filter(([, list]) => list.length);
  const spans = sessions.map(([, list]) => list.map(e => [e.start, endOf(e)] as const));
  const { maps, length } = laneAxes(spans);
  return sessions.map(([session, list], i) => {
    const map = maps[i];
    const bars: IBar[] = list.map((e, j) => {
      const [s, end] = spans[i][j];
      const status = effective(e);
      return {
        id: e.id,
        step: e.step,
        cellId: e.cell_id,
        status,
        x: map(s) / length,
        w: (map(end) - map(s)) / length,
        title: executionTitle(e, status, now)
      };
    });
    const busyS = busySeconds(spans[i]);
    const n = list.length;
    const detail = `${n} execution${n === 1 ? '' : 's'} · ${formatDuration(busyS)} busy`;
    return {
      session,
      label: `session ${i + 1}`,
      detail,
      title:
        `kernel session ${i + 1} (${session}), from ${formatClock(list[0].start)}: ${detail}` +
        ' (idle time not counted)',
      busyS,
      bars
    };
  });
}
