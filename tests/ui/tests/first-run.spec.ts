/**
 * A new user in JupyterLab (a fresh settings directory): the sidebar sits behind a
 * labelled tab, opens by itself the first time a notebook runs a step, and never again
 * once the user closed it.
 */
import { expect, test } from '@playwright/test';

import { baseURL, menu, SIDEBAR, token, waitForKernelIdle } from '../helpers';

test('the sidebar opens by itself the first time a step runs, once per user', async ({
  page
}) => {
  await page.goto(`${baseURL()}/lab/tree/first.ipynb?token=${token()}&reset`);
  await expect(page.locator('.jp-NotebookPanel .jp-Cell').first()).toBeVisible();
  await waitForKernelIdle(page);
  const tab = page.locator('.jp-SideBar .lm-TabBar-tab[data-id="resumable-cells-sidebar"]');
  await expect(tab).toContainText('Resumable cells'); // a labelled tab, not a bare icon
  await expect(page.locator(SIDEBAR)).toBeHidden();

  await menu(page, 'Run', 'Run All Cells');
  await expect(page.locator(SIDEBAR)).toBeVisible();
  await expect(page.locator(`${SIDEBAR} .rc-Step[data-step="hello"]`)).toHaveAttribute(
    'data-status',
    'live'
  );
  await waitForKernelIdle(page);

  // the user closes it: it stays closed, on this page and on a new one (a fresh layout:
  // what is remembered is in the user's settings, not in the workspace)
  await tab.click();
  await expect(page.locator(SIDEBAR)).toBeHidden();
  await page.goto(`${baseURL()}/lab/tree/first.ipynb?token=${token()}&reset`);
  await expect(page.locator('.jp-NotebookPanel .jp-Cell').first()).toBeVisible();
  await waitForKernelIdle(page);
  await menu(page, 'Run', 'Run All Cells');
  await expect(page.locator('.jp-Cell .rc-CellBadge')).toHaveText(['served']);
  await expect(page.locator(SIDEBAR)).toBeHidden();
  await waitForKernelIdle(page);
});
