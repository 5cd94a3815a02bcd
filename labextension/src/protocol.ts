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

export interface IExecution {
  id: string;
  run: string;
  session: string;
  step: string;
  cell_id: string | null;
  key: string | null;
  status: ExecutionStatus;
  start: number;
  end: number | null;
  duration_s: number | null;
  saved_s: number;
  reason: string | null;
  source?: 'local' | 'remote' | null;
  inputs?: IValueInfo[];
  outputs?: IValueInfo[];
  spend?: Partial<ISpend>;
}

export interface IStepRow {
  step: string;
  cell_id: string | null;
  status: ExecutionStatus;
  duration_s: number | null;
  saved_s: number;
  stale: boolean;
  stale_cause: string | null;
  reason: string | null;
  last_start: number | null;
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
  run: IRunInfo | null;
  budget: IBudget | null;
  sessions: string[];
  executions: IExecution[];
  steps: IStepRow[];
}

/** Messages the kernel sends on the `resumable_cells` comm. */
export type KernelMessage =
  | ({ type: 'snapshot' } & ISnapshot)
  | { type: 'execution'; execution: IExecution }
  | { type: 'steps'; steps: IStepRow[]; budget: IBudget | null };

/** The comm target both sides register. */
export const COMM_TARGET = 'resumable_cells';

/** The server route, relative to the server's base URL. */
export const RECORD_ROUTE = 'resumable-cells/record';
