/**
 * The sidebar on a long run, timed (see bigrun.ts): run by bench/sidebar_scale.py, which
 * reads the figures from the JSON file named by RC_BENCH_JSON.
 */
import { test } from '@playwright/test';
import * as fs from 'fs';

import { driveBigRun } from '../bigrun';

test('the sidebar takes 5,000 executions and 100 live updates', async ({ page }) => {
  const figures = await driveBigRun(page);
  const out = process.env.RC_BENCH_JSON;
  if (out) {
    fs.writeFileSync(out, JSON.stringify(figures));
  }
  console.log(JSON.stringify(figures));
});
