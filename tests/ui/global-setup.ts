/**
 * Start a real JupyterLab for the tests: a temporary root dir with copies of the
 * fixture notebooks, a random token, a free port. Waits on the HTTP endpoint.
 */
import { spawn } from 'child_process';
import { randomBytes } from 'crypto';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

export const STATE_FILE = path.join(os.tmpdir(), 'rc-ui-tests-server.json');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForServer(url: string, proc: ReturnType<typeof spawn>, log: string) {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) {
      throw new Error(`jupyter lab exited with ${proc.exitCode}:\n${fs.readFileSync(log, 'utf8')}`);
    }
    try {
      const r = await fetch(url);
      if (r.ok) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise(res => setTimeout(res, 200));
  }
  throw new Error(`jupyter lab did not answer at ${url}:\n${fs.readFileSync(log, 'utf8')}`);
}

export default async function globalSetup(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-ui-'));
  const root = path.join(tmp, 'root');
  fs.mkdirSync(root);
  const notebooks = path.join(__dirname, 'notebooks');
  for (const name of fs.readdirSync(notebooks)) {
    fs.copyFileSync(path.join(notebooks, name), path.join(root, name));
  }
  // No news pop-up over the screenshots.
  const notification = path.join(tmp, 'settings', '@jupyterlab', 'apputils-extension');
  fs.mkdirSync(notification, { recursive: true });
  fs.writeFileSync(
    path.join(notification, 'notification.jupyterlab-settings'),
    JSON.stringify({ fetchNews: 'false' })
  );
  const token = randomBytes(16).toString('hex');
  const port = await freePort();
  const log = path.join(tmp, 'jupyter.log');
  const out = fs.openSync(log, 'w');
  const jupyter = process.env.JUPYTER ?? 'jupyter';
  const proc = spawn(
    jupyter,
    [
      'lab',
      '--no-browser',
      '--allow-root',
      `--ServerApp.token=${token}`,
      '--ServerApp.ip=127.0.0.1',
      `--port=${port}`,
      '--ServerApp.port_retries=0',
      `--ServerApp.root_dir=${root}`,
      '--LabApp.news_url=None',
      '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate',
      `--LabApp.user_settings_dir=${path.join(tmp, 'settings')}`,
      `--LabApp.workspaces_dir=${path.join(tmp, 'workspaces')}`
    ],
    {
      cwd: root,
      env: { ...process.env, JUPYTER_CONFIG_DIR: path.join(tmp, 'config') },
      stdio: ['ignore', out, out],
      detached: true
    }
  );
  const baseURL = `http://127.0.0.1:${port}`;
  await waitForServer(`${baseURL}/api/status?token=${token}`, proc, log);
  const state = { pid: proc.pid, baseURL, token, root, tmp, log };
  fs.writeFileSync(STATE_FILE, JSON.stringify(state));
  process.env.RC_BASE_URL = baseURL;
  process.env.RC_TOKEN = token;
  process.env.RC_ROOT = root;
}
