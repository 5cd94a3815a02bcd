/**
 * What the sidebar does for each message of a long run: rebuild its state from a
 * snapshot of 500 steps and 5,000 executions, apply a live message, build the view.
 * Run by bench/sidebar_view.py (`npx vitest bench --run --config vitest.bench.mts`);
 * the target is 250 ms.
 */

import { bench, describe } from 'vitest';

import { applyMessage, applySnapshot, buildView, emptyState } from '../src/viewmodel';
import { bigRun } from '../test/bigrun';

const big = bigRun(500, 10);

describe('sidebar view', () => {
  bench(
    '500 steps, 5,000 executions: snapshot, a message, the view',
    () => {
      let s = applySnapshot(emptyState(), big.snapshot, 'server');
      s = applyMessage(s, big.message);
      buildView(s, big.cells, big.now);
    },
    { iterations: 30, warmupIterations: 3 }
  );
});
