/**
 * The issues a new user met with the quickstart, in JupyterLab: a badge says what
 * happened to its own cell (not to the latest cell of the same name); a plain cell that
 * changes an input makes exactly the steps that read it stale, with the reason, and
 * "Run stale" runs exactly them, and, being the plan, a parameter cell edited and not run
 * with the steps that read it; step names of 05_explain are readable at the panel's
 * default width.
 */
import { expect, Page, test } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

import {
  baseURL,
  menu,
  rowAt,
  SCREENSHOTS,
  setTheme,
  shownNames,
  SIDEBAR,
  token,
  waitForKernelIdle
} from '../helpers';

async function open(page: Page, name: string): Promise<void> {
  await page.goto(`${baseURL()}/lab/tree/${name}?token=${token()}&reset`);
  await expect(page.locator('.jp-NotebookPanel .jp-Cell').first()).toBeVisible();
  await waitForKernelIdle(page);
  if (!(await page.locator(SIDEBAR).isVisible())) {
    await page.locator('.jp-SideBar [data-id="resumable-cells-sidebar"]').click();
  }
  await expect(page.locator(SIDEBAR)).toBeVisible();
}

/** The prompt numbers of the notebook's cells (`[7]:` -> 7; null when never run). */
async function prompts(page: Page): Promise<Array<number | null>> {
  const texts = await page.locator('.jp-NotebookPanel:visible .jp-InputPrompt').allTextContents();
  return texts.map(t => (/\[(\d+)\]/.exec(t) ? Number(/\[(\d+)\]/.exec(t)![1]) : null));
}

// quick.ipynb: 0 load_ext, 1 ridge = 1.0, 2 data, 3 fit, 4 bootstrap, 5 evaluate,
// 6 report, 7 fit again (same code: served)
const STEP_CELLS = [2, 3, 4, 5, 6, 7];

test('badges per cell; a plain cell makes its readers stale; Run stale runs exactly them', async ({
  page
}) => {
  await open(page, 'quick.ipynb');
  await menu(page, 'Run', 'Run All Cells');
  await expect(rowAt(page, 7)).toHaveAttribute('data-status', 'hit');
  await waitForKernelIdle(page);
  const badges = page.locator('.jp-NotebookPanel:visible .jp-Cell .rc-CellBadge');
  // the first fit cell ran; the later cell with the same name and code was served
  await expect(badges).toHaveText(['ran', 'ran', 'ran', 'ran', 'ran', 'served']);
  await expect(rowAt(page, 3)).toHaveAttribute('data-status', 'live');
  await expect(page.locator(`${SIDEBAR} .rc-Step`)).toHaveCount(STEP_CELLS.length);

  // set ridge = 10.0 in the parameter cell and run it
  const params = page.locator('.jp-NotebookPanel:visible .jp-Cell').nth(1);
  await params.locator('.cm-content').click();
  await page.keyboard.press('Control+a');
  await page.keyboard.type('ridge = 10.0');
  await page.keyboard.press('Shift+Enter');
  await waitForKernelIdle(page);
  const stale = [3, 4, 5, 6, 7]; // every reader of ridge, and what reads them
  for (const i of stale) {
    await expect(rowAt(page, i).locator('.rc-StaleMarker')).toBeVisible();
  }
  await expect(rowAt(page, 2).locator('.rc-StaleMarker')).toHaveCount(0);
  await expect(rowAt(page, 3)).toHaveAttribute('title', /stale: ridge changed \(In \[\d+\]\)/);
  await expect(rowAt(page, 4)).toHaveAttribute('title', /stale: ridge changed \(In \[\d+\]\)/);
  await expect(rowAt(page, 5)).toHaveAttribute('title', /stale: coef comes from stale step fit/);
  // the reason is on the row itself, not only on hover
  await expect(rowAt(page, 3).locator('.rc-StaleCause')).toHaveText(
    /^ridge changed \(In \[\d+\]\)$/
  );
  await expect(rowAt(page, 6).locator('.rc-StaleCause')).toHaveText(
    'score comes from stale step evaluate'
  );
  await expect(badges).toHaveText(['ran', 'stale', 'stale', 'stale', 'stale', 'stale']);
  const runStale = page.locator(`${SIDEBAR} .rc-RunStale`);
  await expect(runStale).toContainText('Run stale (5)');

  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current').click();
  await setTheme(page, 'JupyterLab Light');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'stale-light.png') });
  await setTheme(page, 'JupyterLab Dark');
  await page.screenshot({ path: path.join(SCREENSHOTS, 'stale-dark.png') });
  await setTheme(page, 'JupyterLab Light');

  const before = await prompts(page);
  await runStale.click();
  await expect(runStale).toContainText('Run stale (0)');
  await waitForKernelIdle(page);
  const after = await prompts(page);
  const ran = after.map((p, i) => (p !== before[i] ? i : -1)).filter(i => i >= 0);
  expect(ran).toEqual(stale);
  await expect(rowAt(page, 3)).toHaveAttribute('data-status', 'live'); // a new value of ridge
  await expect(rowAt(page, 7)).toHaveAttribute('data-status', 'hit'); // same key as cell 3
  await expect(page.locator(`${SIDEBAR} .rc-StaleMarker`)).toHaveCount(0);

  // Run stale is the plan: an edit typed and not run (nothing is stale in the kernel yet)
  // counts the parameter cell and every step that reads it, and runs them in order
  await params.locator('.cm-content').click();
  await page.keyboard.press('Control+a');
  await page.keyboard.type('ridge = 3.0');
  await page.keyboard.press('Escape');
  await expect(runStale).toContainText('Run stale (6)');
  await expect(page.locator(`${SIDEBAR} .rc-StaleMarker`)).toHaveCount(0);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'run-stale-plan.png') });
  const typed = await prompts(page);
  await runStale.click();
  await expect(runStale).toContainText('Run stale (0)');
  await waitForKernelIdle(page);
  const rerun = await prompts(page);
  expect(rerun.map((p, i) => (p !== typed[i] ? i : -1)).filter(i => i >= 0)).toEqual([
    1, 3, 4, 5, 6, 7
  ]);
  await expect(rowAt(page, 7)).toHaveAttribute('data-status', 'hit');
});

test('the step names of 05_explain are readable at the default width', async ({ page }) => {
  await open(page, '05_explain.ipynb');
  const width = (await page.locator(SIDEBAR).boundingBox())!.width;
  const { shown, full } = await shownNames(page);
  expect(full).toHaveLength(20);
  expect(full.every(n => n.length <= 16)).toBe(true);
  expect(shown).toEqual(full); // no ellipsis on names up to 16 characters
  console.log(`sidebar ${Math.round(width)} px wide: ${shown.join(' ')}`);
  // the columns say what they count
  await expect(page.locator(`${SIDEBAR} .rc-StepHead`)).toContainText('last run');
  await expect(page.locator(`${SIDEBAR} .rc-StepHead`)).toContainText('saved');
  await expect(page.locator(`${SIDEBAR} .rc-Totals-session th`)).toHaveText('session');
  await expect(page.locator(`${SIDEBAR} .rc-Totals-run th`)).toHaveText('run');
  // the full name is on hover too
  await expect(page.locator(`${SIDEBAR} .rc-Step`).nth(17)).toHaveAttribute(
    'title',
    /^s18_transitions: /
  );

  // a name too long for the column is cut in the middle, never by the column's edge
  const long = 's21_cluster_regimes_over_sliding_windows';
  await page.locator('.jp-NotebookPanel .jp-Cell').last().locator('.jp-InputPrompt').click();
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.type(`%%step ${long}\nregimes = 1`);
  await page.keyboard.press('Escape');
  const name = page.locator(`${SIDEBAR} .rc-StepName[data-name="${long}"]`);
  await expect(name).toHaveText(/^s21_clus\S*…\S*windows$/);
  const overflow = await page
    .locator(`${SIDEBAR} .rc-StepName`)
    .evaluateAll(els => els.filter(e => e.scrollWidth > e.clientWidth).map(e => e.textContent));
  expect(overflow).toEqual([]);
  await page.locator(SIDEBAR).screenshot({ path: path.join(SCREENSHOTS, 'long-names.png') });
});
