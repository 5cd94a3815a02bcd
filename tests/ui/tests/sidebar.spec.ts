/**
 * The sidebar in a real JupyterLab with a real kernel: the steps appear live while
 * Run All executes, are served after a restart (two lanes in the timeline), a click
 * selects the step's cell, and the server route is authenticated and confined.
 */
import { expect, Page, test } from '@playwright/test';
import { execFileSync, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

import { driveBigRun } from '../bigrun';
import {
  baseURL,
  contrastRatio,
  menu,
  rowAt,
  SCREENSHOTS,
  setTheme,
  shownNames,
  SIDEBAR,
  stepRow,
  token,
  waitForKernelIdle
} from '../helpers';

const NOTEBOOK = 'steps.ipynb';
const STEPS = ['load', 'clean', 'notify', 'summary'];

async function openNotebook(page: Page, name = NOTEBOOK): Promise<void> {
  await page.goto(`${baseURL()}/lab/tree/${name}?token=${token()}&reset`);
  await expect(page.locator('.jp-NotebookPanel .jp-Cell').first()).toBeVisible();
  await waitForKernelIdle(page);
  const sidebar = page.locator('#resumable-cells-sidebar');
  if (!(await sidebar.isVisible())) {
    await page.locator('.jp-SideBar [data-id="resumable-cells-sidebar"]').click();
  }
  await expect(sidebar).toBeVisible();
}

async function runAll(page: Page): Promise<void> {
  await menu(page, 'Run', 'Run All Cells');
}

/** Wait for Run All to finish: one more bar per step in the timeline, kernel idle. */
async function waitForRunAllDone(page: Page, barsBefore: number): Promise<void> {
  await expect(page.locator('#resumable-cells-sidebar .rc-Bar')).toHaveCount(
    barsBefore + STEPS.length
  );
  const last = page.locator('.jp-NotebookPanel .jp-Cell').last();
  await expect(last.locator('.jp-InputPrompt')).toHaveText(/\[\d+\]/);
  await waitForKernelIdle(page);
}

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise(resolve => {
    const sock = net.connect(port, '127.0.0.1');
    sock.on('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.on('error', () => resolve(false));
  });
}

/** Type `code` into a new cell at the end of the notebook and run it. */
async function runNewCell(page: Page, code: string): Promise<void> {
  await page.locator('.jp-NotebookPanel .jp-Cell').last().locator('.jp-InputPrompt').click();
  await page.keyboard.press('b');
  await page.keyboard.press('Enter');
  await page.keyboard.type(code);
  await page.keyboard.press('Shift+Enter');
  await waitForKernelIdle(page);
}

async function barCount(page: Page): Promise<number> {
  return page.locator('#resumable-cells-sidebar .rc-Bar').count();
}

/** Hide the file browser, for the README pictures; the sidebar keeps its default width. */
async function layoutForScreenshots(page: Page): Promise<void> {
  // clicking the current tab of the left side bar collapses it
  await page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current').click();
  await expect(page.locator('#jp-left-stack')).toBeHidden();
}

test.describe.serial('the sidebar with a real kernel', () => {
  let page: Page;

  test.beforeAll(async ({ browser }) => {
    page = await browser.newPage();
  });

  test.afterAll(async () => {
    await page.close();
  });

  test('lists the steps of the notebook before anything ran', async () => {
    await openNotebook(page);
    const rows = page.locator('#resumable-cells-sidebar .rc-Step');
    await expect(rows).toHaveCount(STEPS.length);
    await expect(page.locator('#resumable-cells-sidebar .rc-StepName')).toHaveText(STEPS);
    for (const name of STEPS) {
      await expect(stepRow(page, name)).toHaveAttribute('data-status', 'none');
    }
  });

  test('run all: the panel follows the steps live', async () => {
    const bars = await barCount(page);
    expect(bars).toBe(0);
    await runAll(page);
    // `load` sleeps 1.5 s: the panel must show it running, with a growing bar
    await expect(stepRow(page, 'load')).toHaveAttribute('data-status', 'running');
    const bar = page.locator('#resumable-cells-sidebar .rc-Bar[data-status="running"]').first();
    await expect(bar).toBeVisible();
    await waitForRunAllDone(page, bars);
    await expect(stepRow(page, 'load')).toHaveAttribute('data-status', 'live');
    await expect(stepRow(page, 'clean')).toHaveAttribute('data-status', 'live');
    await expect(stepRow(page, 'notify')).toHaveAttribute('data-status', 'effect');
    await expect(stepRow(page, 'summary')).toHaveAttribute('data-status', 'live');
    await expect(page.locator('#resumable-cells-sidebar .rc-Lane')).toHaveCount(1);
    await expect(page.locator('#resumable-cells-sidebar .rc-Bar')).toHaveCount(STEPS.length);
    // hover details of a bar: step, status, start and duration, the reason it ran
    const loadBar = page.locator('#resumable-cells-sidebar .rc-Bar').first();
    await expect(loadBar.locator('title')).toContainText(
      /^load — ran\nstarted \d\d:\d\d:\d\d as In \[\d+\], took 1\.\d+ s/
    );
    // a badge in each step cell's prompt area
    await expect(page.locator('.jp-Cell .rc-CellBadge')).toHaveText([
      'ran',
      'ran',
      'effect',
      'ran'
    ]);
    await expect(page.locator('#resumable-cells-sidebar .rc-RunId')).toHaveText(/\S+/);
  });

  test('restart, run all: the steps are served and there are two lanes', async () => {
    await menu(page, 'Kernel', 'Restart Kernel');
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await waitForKernelIdle(page);
    // the record survives the restart: the panel is still filled from the server
    await expect(stepRow(page, 'load')).toHaveAttribute('data-status', 'live');
    const bars = await barCount(page);
    expect(bars).toBe(STEPS.length);
    await runAll(page);
    await waitForRunAllDone(page, bars);
    await expect(stepRow(page, 'load')).toHaveAttribute('data-status', 'hit');
    await expect(stepRow(page, 'clean')).toHaveAttribute('data-status', 'hit');
    await expect(stepRow(page, 'notify')).toHaveAttribute('data-status', 'effect');
    await expect(stepRow(page, 'summary')).toHaveAttribute('data-status', 'hit');
    await expect(page.locator('#resumable-cells-sidebar .rc-Lane')).toHaveCount(2);
    const lane2 = page.locator('#resumable-cells-sidebar .rc-Lane').nth(1);
    await expect(lane2.locator('.rc-Bar')).toHaveCount(STEPS.length);
    await expect(lane2.locator('.rc-Bar[data-status="hit"]')).toHaveCount(3);
    await expect(page.locator('.jp-Cell .rc-CellBadge')).toHaveText([
      'served',
      'served',
      'effect',
      'served'
    ]);
    // served steps report the time they saved
    await expect(stepRow(page, 'load').locator('.rc-StepSaved')).toHaveText(/\d/);
  });

  test('clicking a step selects its cell', async () => {
    // put the selection elsewhere first
    await page.locator('.jp-NotebookPanel .jp-Cell').first().locator('.jp-InputPrompt').click();
    const active = page.locator('.jp-NotebookPanel .jp-Cell.jp-mod-active');
    await expect(active).toContainText('%load_ext');
    await stepRow(page, 'clean').click();
    await expect(active).toHaveCount(1);
    await expect(active).toContainText('%%step clean');
    await stepRow(page, 'summary').click();
    await expect(active).toContainText('%%step summary');
    // and from the keyboard
    await stepRow(page, 'load').focus();
    await page.keyboard.press('Enter');
    await expect(active).toContainText('%%step load');
  });

  test('editing a producer marks its consumers stale; Run stale runs them', async () => {
    const load = page.locator('.jp-NotebookPanel .jp-Cell').nth(2);
    await load.locator('.cm-content').click();
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('rows = rows[:5000]');
    await page.keyboard.press('Shift+Enter');
    await expect(stepRow(page, 'load')).toHaveAttribute('data-status', 'live');
    // the miss reason is in the row's hover text
    await expect(stepRow(page, 'load')).toHaveAttribute('title', /\nwhy: \S+/);
    // clean read the old rows: stale, and so is what reads clean (staleness is transitive)
    await expect(stepRow(page, 'clean').locator('.rc-StaleMarker')).toBeVisible();
    await expect(stepRow(page, 'load').locator('.rc-StaleMarker')).toHaveCount(0);
    await expect(stepRow(page, 'notify').locator('.rc-StaleMarker')).toBeVisible();
    await expect(stepRow(page, 'summary').locator('.rc-StaleMarker')).toBeVisible();
    await expect(stepRow(page, 'summary')).toHaveAttribute('title', /comes from stale step/);
    const badges = page.locator('.jp-Cell .rc-CellBadge');
    await expect(badges.nth(0)).toHaveText('ran');
    await expect(badges.nth(1)).toHaveText('stale');
    const runStale = page.locator('#resumable-cells-sidebar .rc-RunStale');
    await expect(runStale).toContainText(/Run stale \([1-9]\)/);
    await expect(runStale).toHaveAttribute('aria-disabled', 'false');

    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.locator('.jp-NotebookPanel .jp-Cell').first().locator('.jp-InputPrompt').click();
    await layoutForScreenshots(page);
    await setTheme(page, 'JupyterLab Light');
    await page.screenshot({
      path: path.join(SCREENSHOTS, 'sidebar-light.png')
    });
    await setTheme(page, 'JupyterLab Dark');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'sidebar-dark.png') });
    await setTheme(page, 'JupyterLab Light');
    await page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').click();
    await expect(page.locator('#jp-left-stack')).toBeVisible();

    // Run stale until nothing is stale: like make, each pass runs what is out of date
    const markers = page.locator('#resumable-cells-sidebar .rc-StaleMarker');
    for (let pass = 0; pass < 3 && (await markers.count()) > 0; pass++) {
      const before = await runStale.textContent();
      await runStale.click();
      await expect(runStale).not.toHaveText(before ?? '');
      await waitForKernelIdle(page);
    }
    await expect(markers).toHaveCount(0);
    await expect(stepRow(page, 'clean')).toHaveAttribute('data-status', 'live');
    await expect(stepRow(page, 'summary')).toHaveAttribute('data-status', 'live');
    await expect(runStale).toContainText('Run stale (0)');
    await expect(runStale).toHaveAttribute('aria-disabled', 'true');
  });

  test("clearing a step's cache asks first, then its next run is live", async () => {
    const row = stepRow(page, 'summary');
    // run it once more: served, since nothing changed
    await row.click();
    await page.keyboard.press('Control+Enter');
    await expect(row).toHaveAttribute('data-status', 'hit');
    await waitForKernelIdle(page);

    // Cancel leaves the cache alone
    await row.hover();
    await row.locator('.rc-StepClear').click();
    await expect(page.locator('.jp-Dialog')).toContainText('summary');
    await page.locator('.jp-Dialog .jp-mod-reject').click();
    await expect(page.locator('.jp-Dialog')).toHaveCount(0);

    await row.hover();
    await row.locator('.rc-StepClear').click();
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(page.locator('.jp-Dialog')).toHaveCount(0);
    await waitForKernelIdle(page);

    await row.click();
    await page.keyboard.press('Control+Enter');
    // a cleared step cannot be served: it runs
    await expect(row).toHaveAttribute('data-status', 'running');
    await expect(row).toHaveAttribute('data-status', 'live');
    await waitForKernelIdle(page);
  });

  test('the panel follows the notebook in focus; errors and the budget', async () => {
    await page.locator('.jp-DirListing-item[title*="other.ipynb"]').dblclick();
    const rows = page.locator('#resumable-cells-sidebar .rc-StepName');
    await expect(rows).toHaveText(['only', 'boom']);
    await page.locator('.lm-TabBar-tab', { hasText: NOTEBOOK }).click();
    await expect(rows).toHaveText(STEPS);
    await page.locator('.lm-TabBar-tab', { hasText: 'other.ipynb' }).click();
    await expect(rows).toHaveText(['only', 'boom']);

    await waitForKernelIdle(page);
    await runAll(page);
    await expect(stepRow(page, 'boom')).toHaveAttribute('data-status', 'error');
    await expect(stepRow(page, 'only')).toHaveAttribute('data-status', 'live');
    await expect(page.locator('.jp-NotebookPanel:visible .rc-CellBadge')).toHaveText([
      'ran',
      'error'
    ]);
    const sidebar = page.locator('#resumable-cells-sidebar');
    await expect(sidebar.locator('.rc-Totals-session .rc-status-error')).toHaveText('1');
    await expect(sidebar.locator('.rc-Totals-run .rc-status-error')).toHaveText('1');
    await expect(sidebar.locator('.rc-Gauge').first()).toContainText(/steps\s*\d of 5/);
    await expect(sidebar.locator('.rc-Gauge').nth(1)).toContainText('0 of 1000');
    await expect(sidebar.locator('.rc-Bar[data-status="error"]')).toHaveCount(1);
    await waitForKernelIdle(page);

    // save first, so closing asks nothing
    await menu(page, 'File', 'Save Notebook');
    await expect(
      page.locator('.lm-TabBar-tab.jp-mod-dirty', { hasText: 'other.ipynb' })
    ).toHaveCount(0);
    await menu(page, 'File', 'Close Tab');
    await expect(rows).toHaveText(STEPS);
  });

  test('the panel survives a rename of the notebook', async () => {
    const runId = await page.locator('#resumable-cells-sidebar .rc-RunId').textContent();
    await menu(page, 'File', 'Rename Notebook');
    const input = page.locator('.jp-Dialog input');
    await input.fill('renamed.ipynb');
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(page.locator('.lm-TabBar-tab', { hasText: 'renamed.ipynb' })).toBeVisible();
    const check = async () => {
      await expect(page.locator('#resumable-cells-sidebar .rc-RunId')).toHaveText(runId ?? '');
      await expect(page.locator('#resumable-cells-sidebar .rc-StepName')).toHaveText(STEPS);
      await expect(stepRow(page, 'load')).toHaveAttribute('data-status', 'live');
      await expect(page.locator('#resumable-cells-sidebar .rc-Lane')).toHaveCount(2);
    };
    await check();
    // and reloading the stored record under the new name gives the same run
    await page.locator('#resumable-cells-sidebar .rc-Refresh').click();
    await check();
    const r = await page.request.get(`${baseURL()}/resumable-cells/record?path=renamed.ipynb`, {
      headers: { Authorization: `token ${token()}` }
    });
    expect(r.status()).toBe(200);
    expect((await r.json()).run.id).toBe(runId);
    // and the kernel goes on with the same run under the new name
    await stepRow(page, 'summary').click();
    await page.keyboard.press('Control+Enter');
    await waitForKernelIdle(page);
    await expect(stepRow(page, 'summary')).toHaveAttribute('data-status', 'hit');
    await expect(page.locator('#resumable-cells-sidebar .rc-RunId')).toHaveText(runId ?? '');
    const lanes = page.locator('#resumable-cells-sidebar .rc-Lane');
    await expect(lanes.nth(1).locator('.rc-Bar').last()).toHaveAttribute('data-status', 'hit');
  });

  test('a new run asks first, starts empty, and is served from the kept cache', async () => {
    const runId = page.locator('#resumable-cells-sidebar .rc-RunId');
    const before = await runId.textContent();
    await page.locator('#resumable-cells-sidebar .rc-NewRun').click();
    await expect(page.locator('.jp-Dialog')).toContainText('new run');
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(runId).not.toHaveText(before ?? '');
    await expect(runId).toHaveText(/\S+/);
    await expect(page.locator('#resumable-cells-sidebar .rc-Lane')).toHaveCount(0);
    for (const name of STEPS) {
      await expect(stepRow(page, name)).toHaveAttribute('data-status', 'none');
    }
    await waitForKernelIdle(page);
    await runAll(page);
    await waitForRunAllDone(page, 0);
    await expect(stepRow(page, 'load')).toHaveAttribute('data-status', 'hit');
    await expect(stepRow(page, 'notify')).toHaveAttribute('data-status', 'effect');
    await expect(page.locator('#resumable-cells-sidebar .rc-Lane')).toHaveCount(1);
  });

  test('the cache at a glance; clearing it all asks first, then every step runs', async () => {
    const sidebar = page.locator(SIDEBAR);
    // this run: load, clean and summary served, notify an effect (not counted)
    await expect(sidebar.locator('.rc-HitRate')).toContainText(
      /100% served \(3 of 3 pure executions\) · \S+ \S+ saved/
    );
    const store = sidebar.locator('.rc-CacheLine[data-name="store"]');
    await expect(store).toContainText(/\S+ \S+ of 10\.0 GiB · [1-9]\d* entries/);
    const clear = sidebar.locator('.rc-ClearAll');
    for (const theme of ['JupyterLab Dark', 'JupyterLab Light'] as const) {
      await setTheme(page, theme);
      expect(await contrastRatio(clear), `Clear cache… in ${theme}`).toBeGreaterThanOrEqual(4.5);
    }

    await clear.click();
    await expect(page.locator('.jp-Dialog')).toContainText('cached entries');
    await page.locator('.jp-Dialog .jp-mod-reject').click(); // Cancel keeps everything
    await expect(page.locator('.jp-Dialog')).toHaveCount(0);
    await expect(store).toContainText(/[1-9]\d* entries/);

    await clear.click();
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(store).toContainText('0 B of 10.0 GiB · 0 entries');
    await expect(clear).toBeDisabled();
    await waitForKernelIdle(page);
    const before = await barCount(page);
    await runAll(page);
    await waitForRunAllDone(page, before);
    for (const name of ['load', 'clean', 'summary']) {
      await expect(stepRow(page, name)).toHaveAttribute('data-status', 'live');
    }
    await expect(sidebar.locator('.rc-HitRate')).toContainText('50% served (3 of 6');
    await expect(store).toContainText(/ 3 entries/);
  });

  test('a value written behind is shown until its entry is stored', async () => {
    const sidebar = page.locator(SIDEBAR);
    const store = sidebar.locator('.rc-CacheLine[data-name="store"]');
    const writing = sidebar.locator('.rc-CacheLine[data-name="writing"]');
    await expect(writing).toHaveCount(0);
    // A new cell at the end: slow the kernel's blob writes (1.6 s for 32 MiB), so the
    // write is still going when the step has returned, then bind a 32 MiB array.
    await page.locator('.jp-NotebookPanel .jp-Cell').last().locator('.jp-InputPrompt').click();
    await page.keyboard.press('b');
    await page.keyboard.press('Enter');
    await page.keyboard.type(
      'import time as _t, resumable_cells.storage.blobs as _b; _w = _b.BlobWriter.write; ' +
        '_b.BlobWriter.write = lambda self, data: ' +
        '(_t.sleep(0.05 * memoryview(data).nbytes / (1 << 20)), _w(self, data))[1]'
    );
    await page.keyboard.press('Shift+Enter');
    await waitForKernelIdle(page);
    await page.keyboard.press('Enter');
    await page.keyboard.type('%%step big\nimport numpy as np\nbig = np.ones(4 << 20)');
    await page.keyboard.press('Shift+Enter');
    await expect(stepRow(page, 'big')).toHaveAttribute('data-status', 'live');
    await expect(writing).toContainText(/^1 entry · 32\.0 MiB: big$/);
    await expect(writing).toHaveAttribute('title', /written in the background/);
    await sidebar.screenshot({
      path: path.join(SCREENSHOTS, 'sidebar-writing.png')
    });
    // the writer's own message, once the entry is stored: the line goes, the count grows
    await expect(writing).toHaveCount(0);
    await expect(store).toContainText(/ 4 entries/);
  });
});

test.describe.serial("a teammate's entries from the team cache", () => {
  const REDIS = process.env.REDIS_SERVER ?? '/usr/bin/redis-server';
  let redis: ReturnType<typeof spawn> | null = null;

  test.afterAll(() => {
    redis?.kill('SIGKILL');
  });

  test('a served row says who computed its value, from what and where', async ({ page }) => {
    const port = await freePort();
    const args = ['--port', `${port}`, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    redis = spawn(REDIS, args, { stdio: 'ignore' });
    await expect.poll(() => listening(port)).toBe(true);
    const url = `redis://127.0.0.1:${port}/0`;
    const teamKey = randomBytes(32).toString('hex');
    // ana's engine, in a process and a store of its own, computes and pushes two steps
    const peer = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-peer-'));
    execFileSync(process.env.PYTHON ?? 'python', [path.join(__dirname, '..', 'team_peer.py')], {
      env: {
        ...process.env,
        RESUMABLE_CELLS_DIR: path.join(peer, 'store'),
        RESUMABLE_CELLS_KEY_FILE: path.join(peer, 'secret.key'),
        RESUMABLE_CELLS_TEAM_KEY: teamKey,
        RESUMABLE_CELLS_REMOTE: url,
        RESUMABLE_CELLS_IDENTITY: 'ana@gpu-3'
      },
      stdio: 'pipe'
    });
    await openNotebook(page, 'team.ipynb');
    await runAll(page); // %load_ext
    await waitForKernelIdle(page);
    await runNewCell(
      page,
      `import os; os.environ['RESUMABLE_CELLS_TEAM_KEY'] = '${teamKey}'\n%step config --remote ${url}`
    );
    await runNewCell(page, '%%step team_load\nteam_df = list(range(100))');
    await expect(stepRow(page, 'team_load')).toHaveAttribute('data-status', 'hit');
    await runNewCell(page, '%%step team_sum\nteam_s = sum(team_df)');
    const row = stepRow(page, 'team_sum');
    await expect(row).toHaveAttribute('data-status', 'hit');
    // the row's line: who and where; its tooltip: the whole sentence, inputs and age too
    await expect(row.locator('.rc-StepProvenance')).toHaveText(
      `computed by ana on gpu-3 · served from redis://127.0.0.1:${port}/0`
    );
    const said = new RegExp(
      '^computed by ana on gpu-3, \\d+ \\w+ ago, from team_df@[0-9a-f]{4} \\(team_load\\), ' +
        `served from redis://127\\.0\\.0\\.1:${port}/0$`,
      'm'
    );
    await expect(row).toHaveAttribute('title', said);
    await layoutForScreenshots(page);
    await page
      .locator(SIDEBAR)
      .screenshot({ path: path.join(SCREENSHOTS, 'sidebar-provenance.png') });
    await runNewCell(page, '%step config --remote none');
  });
});

test.describe('at scale', () => {
  // How fast the panel takes this is measured by bench/sidebar_scale.py, not here.
  test('500 steps and 5,000 executions render, and live updates all arrive', async ({ page }) => {
    await driveBigRun(page); // waits for the 5,000 bars, the stale rows and the 100 updates
    const sidebar = page.locator(SIDEBAR);
    await expect(sidebar.locator('.rc-Step')).toHaveCount(500);
    await expect(sidebar.locator('.rc-Bar[data-status="live"]')).toHaveCount(600);
  });
});

test.describe('the server route', () => {
  const route = () => `${baseURL()}/resumable-cells/record`;

  test('answers 403 without the token', async ({ request }) => {
    const r = await request.get(`${route()}?path=${NOTEBOOK}`);
    expect(r.status()).toBe(403);
  });

  test('answers 404 for a path outside the root and a missing notebook', async ({ request }) => {
    const headers = { Authorization: `token ${token()}` };
    for (const p of [
      '../etc/passwd',
      '../../../../../../etc/passwd',
      '/etc/passwd',
      'nope.ipynb'
    ]) {
      const r = await request.get(`${route()}?path=${encodeURIComponent(p)}`, {
        headers
      });
      expect(r.status(), p).toBe(404);
    }
  });

  test('answers the snapshot of the notebook with the token', async ({ request }) => {
    const headers = { Authorization: `token ${token()}` };
    const r = await request.get(`${route()}?path=other.ipynb`, { headers });
    expect(r.status()).toBe(200);
    const snap = await r.json();
    expect(snap.notebook).toBe('other.ipynb');
    expect(Array.isArray(snap.executions)).toBe(true);
  });
});
