/**
 * The sidebar on a long run: `big.ipynb` (written by global-setup.ts) sends a snapshot
 * of 500 steps and 5,000 executions over the comm, then 100 live executions at about
 * 100 messages a second. The browser test checks what the panel shows
 * (tests/sidebar.spec.ts); the benchmark times it (bench/scale.bench.ts, run by
 * bench/sidebar_scale.py). No test asserts how long it takes.
 */
import { expect, Page } from '@playwright/test';

import { baseURL, SIDEBAR, token, waitForKernelIdle } from './helpers';

export interface IScaleFigures {
  /** From running the first cell to 5,000 bars, 10 lanes and 10 stale rows drawn. */
  snapshotMs: number;
  /** Running the second cell: the kernel sending its 200 messages. */
  sentMs: number;
  /** From running the second cell to the panel showing all 100 finished. */
  caughtUpMs: number;
  /** The longest main-thread task while the panel took the data. */
  longestTaskMs: number;
}

export async function driveBigRun(page: Page): Promise<IScaleFigures> {
  await page.goto(`${baseURL()}/lab/tree/big.ipynb?token=${token()}&reset`);
  await expect(page.locator('.jp-NotebookPanel .jp-Cell').first()).toBeVisible();
  await waitForKernelIdle(page);
  const sidebar = page.locator(SIDEBAR);
  if (!(await sidebar.isVisible())) {
    await page.locator('.jp-SideBar [data-id="resumable-cells-sidebar"]').click();
  }
  const rows = sidebar.locator('.rc-Step');
  await expect(rows).toHaveCount(500);
  await page.evaluate(() => {
    const w = window as unknown as { rcLongTasks: number[] };
    w.rcLongTasks = [];
    new PerformanceObserver(list => {
      for (const entry of list.getEntries()) {
        w.rcLongTasks.push(entry.duration);
      }
    }).observe({ type: 'longtask', buffered: false });
  });

  const first = page.locator('.jp-NotebookPanel .jp-Cell').first();
  await first.locator('.jp-InputPrompt').click();
  let t = Date.now();
  await page.keyboard.press('Shift+Enter');
  await expect(sidebar.locator('.rc-Bar')).toHaveCount(5000);
  await expect(sidebar.locator('.rc-Lane')).toHaveCount(10);
  await expect(rows.filter({ has: page.locator('.rc-StaleMarker') })).toHaveCount(10);
  const snapshotMs = Date.now() - t;
  await waitForKernelIdle(page);

  t = Date.now();
  await page.keyboard.press('Shift+Enter');
  await waitForKernelIdle(page);
  const sentMs = Date.now() - t;
  await expect(sidebar.locator('.rc-Bar')).toHaveCount(5100);
  await expect(sidebar.locator('.rc-Bar[data-status="running"]')).toHaveCount(0);
  const caughtUpMs = Date.now() - t;
  const longTasks = await page.evaluate(
    () => (window as unknown as { rcLongTasks: number[] }).rcLongTasks
  );
  return { snapshotMs, sentMs, caughtUpMs, longestTaskMs: Math.max(0, ...longTasks) };
}
