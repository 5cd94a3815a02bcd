/**
 * A long run for the scale check (test/viewmodel.test.ts) and the benchmark
 * (bench/view.bench.ts): `n` steps, each run once live and then served in each of
 * `sessions - 1` later kernel sessions, and a live message on top.
 */

import type { IExecution, ISnapshot, IStepRow, KernelMessage } from '../src/protocol';
import type { ICellInfo } from '../src/viewmodel';

export const T0 = 1796000000;

export interface IBigRun {
  cells: ICellInfo[];
  snapshot: ISnapshot;
  message: KernelMessage;
  now: number;
}

export function bigRun(n = 500, sessions = 10): IBigRun {
  const cells: ICellInfo[] = [];
  for (let i = 0; i < n; i++) {
    cells.push({ id: `c${i}`, source: `%%step s${i}\nx${i} = ${i}` });
  }
  const executions: IExecution[] = [];
  for (let k = 0; k < sessions; k++) {
    for (let i = 0; i < n; i++) {
      const start = T0 + k * 10000 + i * 2;
      executions.push({
        id: `e${k}-${i}`,
        run: 'r-1',
        session: `k-${k}`,
        step: `s${i}`,
        cell_id: `c${i}`,
        key: 'k',
        status: k === 0 ? 'live' : 'hit',
        start,
        end: start + 1,
        duration_s: 1,
        saved_s: k === 0 ? 0 : 1,
        reason: null
      });
    }
  }
  const steps: IStepRow[] = Array.from({ length: n }, (_, i) => ({
    step: `s${i}`,
    cell_id: `c${i}`,
    status: 'hit',
    duration_s: 1,
    saved_s: 0,
    stale: false,
    stale_cause: null,
    reason: null,
    last_start: T0,
    executions: sessions
  }));
  const snapshot: ISnapshot = {
    notebook: 'big.ipynb',
    run: { id: 'r-1', epoch: '2026-11-29T09:30:00+00:00', seed: 1, created: T0 },
    budget: {
      limits: { steps: null, tokens: null, cost: null },
      spent: { steps: n, tokens: 0, cost: 0 }
    },
    sessions: Array.from({ length: sessions }, (_, k) => `k-${k}`),
    executions,
    steps
  };
  const message: KernelMessage = {
    type: 'execution',
    execution: {
      id: 'new',
      run: 'r-1',
      session: `k-${sessions - 1}`,
      step: 's1',
      cell_id: 'c1',
      key: 'k',
      status: 'running',
      start: T0 + 99999,
      end: null,
      duration_s: null,
      saved_s: 0,
      reason: null
    }
  };
  return { cells, snapshot, message, now: T0 + 100000 };
}
