/**
 * A widget a step displayed, in a real JupyterLab: live, tqdm's progress bar is a widget;
 * after a restart the step is served, and the bar shows as its last line of text, not as
 * an error about a model the new kernel never made.
 */
import { expect, test } from '@playwright/test';
import * as path from 'path';

import { baseURL, cell, menu, runCell, SCREENSHOTS, token, waitForKernelIdle } from '../helpers';

test('a progress bar a served step showed is its last line after a restart', async ({ page }) => {
  await page.goto(`${baseURL()}/lab/tree/widgets.ipynb?token=${token()}&reset`);
  await expect(cell(page, 0)).toBeVisible();
  await waitForKernelIdle(page);
  await runCell(page, 0);
  await runCell(page, 1);
  const output = cell(page, 1).locator('.jp-OutputArea');
  await expect(output.locator('.widget-hprogress')).toBeVisible(); // the live widget
  await expect(output).toContainText('ran in');

  await menu(page, 'Kernel', 'Restart Kernel…');
  await page.locator('.jp-Dialog .jp-mod-accept').click();
  await waitForKernelIdle(page);
  await runCell(page, 0);
  await runCell(page, 1);
  await expect(output).toContainText('served from cache');
  await expect(output).toContainText(/100%\|█+\| 5\/5/);
  await expect(output.locator('.widget-hprogress')).toHaveCount(0);
  await expect(output).not.toContainText('model not found');
  await cell(page, 1).screenshot({ path: path.join(SCREENSHOTS, 'widget-served.png') });
});
