/**
 * Restore session in a real JupyterLab: cells run out of order in auto mode, the kernel
 * restarts, the panel offers the session back and serves it (a probe prints what it
 * printed before); after another restart, a cell edited since it ran (unsaved) stops the
 * restore there, saying why, with the cell selected; `%step plan` sees the unsaved edit.
 */
import { expect, Page, test } from '@playwright/test';
import * as path from 'path';

import {
  baseURL,
  cell,
  menu,
  runCell,
  SCREENSHOTS,
  SIDEBAR,
  token,
  waitForKernelIdle
} from '../helpers';

async function restart(page: Page): Promise<void> {
  await menu(page, 'Kernel', 'Restart Kernel…');
  await page.locator('.jp-Dialog .jp-mod-accept').click();
  await waitForKernelIdle(page);
  await runCell(page, 0); // %load_ext and auto mode: not a step
}

test('Restore session brings back cells run out of order, and stops at an edit', async ({
  page
}) => {
  await page.goto(`${baseURL()}/lab/tree/carry.ipynb?token=${token()}&reset`);
  await expect(cell(page, 0)).toBeVisible();
  await waitForKernelIdle(page);
  const sidebar = page.locator(SIDEBAR);
  if (!(await sidebar.isVisible())) {
    await page.locator('.jp-SideBar [data-id="resumable-cells-sidebar"]').click();
  }
  // out of notebook order: a, then b (cell 3), then c (cell 2), then the probe
  for (const i of [0, 1, 3, 2, 4]) {
    await runCell(page, i);
  }
  const probe = cell(page, 4).locator('.jp-OutputArea-output');
  await expect(probe).toHaveText('probe 2 20 22');
  const restore = sidebar.locator('.rc-Restore');
  await expect(restore).toHaveCount(0); // this session ran cells: nothing to offer

  await restart(page);
  await expect(restore).toHaveText('Restore session');
  await expect(sidebar.locator('.rc-RestoreWhat')).toHaveText(/^4 cells, \S+ \S+, ~\S+ ms$/);
  await sidebar.screenshot({ path: path.join(SCREENSHOTS, 'restore-offer.png') });
  await restore.click();
  const said = sidebar.locator('.rc-Restored');
  await expect(said).toContainText(/restored 4 of 4 executions of session/);
  await expect(restore).toHaveCount(0);
  const badges = page.locator('.jp-Cell .rc-CellBadge');
  await expect(badges).toHaveText(['served', 'served', 'served', 'served']);
  await sidebar.screenshot({ path: path.join(SCREENSHOTS, 'restore.png') });
  // the namespace is the one before the restart: a new probe prints the same
  await cell(page, 4).locator('.jp-InputPrompt').click();
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.type("print('again', a, b, c)");
  await page.keyboard.press('Control+Enter');
  await expect(cell(page, 5).locator('.jp-OutputArea-output')).toHaveText('again 2 20 22');
  await waitForKernelIdle(page);

  // an edit since it ran, not saved: the restore serves what comes before and stops there
  await restart(page);
  await cell(page, 3).locator('.cm-content').click();
  await page.keyboard.press('Control+End');
  await page.keyboard.type(' + 1');
  await page.keyboard.press('Escape');
  await restore.click();
  await expect(said).toContainText(
    /^restored 1 of \d+ executions .*; stopped at b \(In \[\d+\]\): the cell was edited since it ran$/
  );
  await expect(said).toHaveClass(/rc-mod-stopped/);
  await expect(cell(page, 3)).toHaveClass(/jp-mod-selected/);

  // `%step plan` plans from the cells as the notebook holds them: the edit is not saved
  await cell(page, 5).locator('.jp-InputPrompt').click();
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.type('%step plan');
  await page.keyboard.press('Control+Enter');
  await expect(cell(page, 6).locator('.jp-OutputArea-output')).toContainText(
    /run\s*b\s*code changed/
  );
});
