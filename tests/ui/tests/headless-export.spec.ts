/**
 * A notebook run headless (`jupyter nbconvert --execute`, twice: the second run is
 * served) and exported with `jupyter nbconvert --to html`, opened in Chromium: the
 * status lines, `%step status`, `%step plan`, `%step why` and the timeline read there
 * too. Writes docs/screenshots/nbconvert-html.png. (tests/test_headless.py checks the
 * exported HTML itself.)
 */
import { expect, test } from '@playwright/test';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

import { SCREENSHOTS } from '../helpers';

const REPORT = path.resolve(__dirname, '..', '..', 'shared', 'report.ipynb');

function jupyter(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]): void {
  const run = spawnSync('python', ['-m', 'jupyter', ...args], {
    cwd,
    env,
    encoding: 'utf8',
    timeout: 600_000
  });
  if (run.status !== 0) {
    throw new Error(`jupyter ${args.join(' ')} failed:\n${run.stderr}`);
  }
}

test('an executed notebook exported to HTML shows every report readably', async ({ page }) => {
  test.setTimeout(600_000);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-export-'));
  const work = path.join(root, 'work');
  const tmp = path.join(root, 'tmp'); // beside the work directory: the tripwire watches it
  fs.mkdirSync(work);
  fs.mkdirSync(tmp);
  fs.copyFileSync(REPORT, path.join(work, 'report.ipynb'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TMPDIR: tmp,
    RESUMABLE_CELLS_KEY_FILE: path.join(root, 'key')
  };
  delete env.JPY_SESSION_NAME; // nbconvert does not name the notebook
  delete env.RESUMABLE_CELLS_DIR;
  const execute = ['nbconvert', '--to', 'notebook', '--execute', '--output', 'run.ipynb'];
  jupyter(work, env, ...execute, 'report.ipynb');
  jupyter(work, env, ...execute, 'report.ipynb'); // a new kernel: served
  jupyter(work, env, 'nbconvert', '--to', 'html', 'run.ipynb');

  await page.setViewportSize({ width: 1000, height: 800 });
  await page.goto(`file://${path.join(work, 'run.html')}`);
  await expect(page.locator('.rc-status')).toHaveCount(3);
  await expect(page.locator('.rc-status').first()).toContainText('served from cache in');
  const status = page.locator('.rc-status-table');
  await expect(status.locator('tbody tr')).toHaveCount(3);
  await expect(status).toContainText('hit rate of the run: 50% served (3 of 6 pure executions)');
  await expect(status).toContainText(/store \S+: \S+ \S+ of 10\.0 GiB, 3 entries/);
  await expect(page.locator('.rc-plan tr[data-action="serve"]')).toHaveCount(3);
  await expect(page.getByText('step fit: one entry only')).toBeVisible();
  await expect(page.locator('svg.rc-timeline .rc-lane')).toHaveCount(2);
  await page.screenshot({ path: path.join(SCREENSHOTS, 'nbconvert-html.png'), fullPage: true });
  fs.rmSync(root, { recursive: true, force: true });
});
