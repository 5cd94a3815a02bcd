/**
 * The data shapes the kernel, the server route and the sidebar agree on.
 * Mirrors docs/PROTOCOL.md; times are Unix seconds.
 */

export type ExecutionStatus =
  'running' | 'hit' | 'live' | 'effect' | 'error' | 'interrupted' | 'refused';

export interface IValueInfo {
  name: string;
  type: string;
  size: number | null;
  digest?: string | null;
}

export interface ISpend {
  steps: number;
  tokens: number;
  cost: number;
}

/** An input of the key that made a value: its digest and the step (and entry key)
 * whose execution bound it, when known. */
export interface IInputOrigin {
  name: string;
  digest: string | null;
  step: string | null;
  key: string | null;
}

/** Where the value an execution left came from (see docs/PROTOCOL.md). */
export interface IProvenance {
  computed: number | null;
  /** Who computed it, as they share it (null: withheld). */
  user: string | null;
  host: string | null;
  packages: Record<string, string>;
  inputs: IInputOrigin[];
  /** A hit's team cache (its URL); null when served locally or computed here. */
  served_from: string | null;
  /** False for an entry of a version that did not record who computed it. */
  recorded: boolean;
}

export interface IExecution {
  id: string;
  run: string;
  session: string;
  step: string;
  cell_id: string | null;
  /** The prompt number (`In [n]`) of the cell when it ran, or null. */
  execution_count?: number | null;
  key: string | null;
  status: ExecutionStatus;
  start: number;
  end: number | null;
  duration_s: number | null;
  saved_s: number;
  reason: string | null;
  /** When the value it left was computed: a hit's entry's creation, else its end. */
  computed?: number | null;
  source?: 'local' | 'remote' | null;
  inputs?: IValueInfo[];
  outputs?: IValueInfo[];
  spend?: Partial<ISpend>;
  provenance?: IProvenance | null;
}

/** One step in one cell: rows are keyed by (step, cell_id). */
export interface IStepRow {
  step: string;
  cell_id: string | null;
  execution_count?: number | null;
  status: ExecutionStatus;
  duration_s: number | null;
  saved_s: number;
  stale: boolean;
  stale_cause: string | null;
  reason: string | null;
  last_start: number | null;
  /** When the value the row's last execution left was computed (see IExecution). */
  computed?: number | null;
  /** The provenance of that value (see IExecution). */
  provenance?: IProvenance | null;
  executions: number;
}

export interface IBudget {
  limits: { steps: number | null; tokens: number | null; cost: number | null };
  spent: { steps: number; tokens: number; cost: number };
}

export interface IRunInfo {
  id: string;
  epoch: string;
  seed: number;
  created: number;
}

export interface ISnapshot {
  notebook: string;
  /** The kernel session that sent this snapshot; null from the server route. */
  session?: string | null;
  run: IRunInfo | null;
  budget: IBudget | null;
  sessions: string[];
  executions: IExecution[];
  steps: IStepRow[];
  /** The cache at a glance; the team cache only from the kernel. */
  cache?: ICacheFigures | null;
}

/** The local store: the bytes its blobs take, its size limit and its entries. */
export interface IStoreFigures {
  dir: string;
  bytes: number;
  limit: number;
  entries: number;
}

/** The team cache, when one is set: what its server says, or why it could not. */
export interface ITeamFigures {
  url: string;
  bytes: number | null;
  limit: number | null;
  entries: number | null;
  error: string | null;
}

/** Entries the kernel is still writing behind the user's back (its own; never stored). */
export interface IWritingFigures {
  entries: number;
  bytes: number;
  /** Their steps, in the order they will be stored. */
  steps: string[];
}

export interface ICacheFigures {
  store: IStoreFigures | null;
  team?: ITeamFigures | null;
  writing?: IWritingFigures | null;
}

/** How far a Restore session went, and where it stopped (docs/PROTOCOL.md). */
export interface IRestored {
  planned: number;
  restored: number;
  stopped: { step: string; cell_id: string | null; why: string } | null;
  text: string;
}

/** The plan's answer to the panel's Run stale: the cells out of date (docs/PROTOCOL.md). */
export interface IPlanAnswer {
  /** The request it answers (the panel numbers them). */
  request: number;
  /** Ids of the cells to run, in notebook order. */
  run: string[];
  /** Why there is no plan (a bad %%step line), else null. */
  error: string | null;
}

/** Messages the kernel sends on the `resumable_cells` comm. */
export type KernelMessage =
  | ({ type: 'snapshot' } & ISnapshot)
  | { type: 'execution'; execution: IExecution }
  | { type: 'steps'; steps: IStepRow[]; budget: IBudget | null; cache?: ICacheFigures | null }
  | { type: 'cache'; cache: ICacheFigures }
  | ({ type: 'restored' } & IRestored)
  | ({ type: 'plan' } & IPlanAnswer);

/** The comm target both sides register. */
export const COMM_TARGET = 'resumable_cells';

/** The server route, relative to the server's base URL. */
export const RECORD_ROUTE = 'resumable-cells/record';
