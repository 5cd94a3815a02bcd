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

/** Python that sends a 500-step, 5,000-execution snapshot over the sidebar's comm. */
const SEND_SNAPSHOT = `import time
from comm import create_comm
T0 = time.time() - 100_000
N = 500
execs = []
for k in range(10):
    for i in range(N):
        s = T0 + k * 10_000 + i * 2
        execs.append(dict(id=f"e{k}-{i}", run="r-big", session=f"k-{k}", step=f"s{i}",
            cell_id=None, key=None, status="live" if k == 0 else "hit", start=s, end=s + 1,
            duration_s=1.0, saved_s=0.0 if k == 0 else 1.0, reason=None, source=None,
            inputs=[dict(name="x", type="int", size=28, digest="00")], outputs=[],
            spend=dict(steps=1, tokens=0, cost=0.0)))
rows = [dict(step=f"s{i}", cell_id=None, status="hit", duration_s=1.0, saved_s=9.0,
    stale=i % 50 == 0, stale_cause="input x changed" if i % 50 == 0 else None, reason=None,
    last_start=T0 + 90_000 + i * 2, executions=10) for i in range(N)]
big = create_comm(target_name="resumable_cells", data=dict(type="snapshot",
    notebook="big.ipynb", run=dict(id="r-big", epoch="", seed=0, created=T0), budget=None,
    sessions=[f"k-{k}" for k in range(10)], executions=execs, steps=rows))`;

/** Python that streams 100 more executions (start and end of each) on that comm. */
const SEND_EXECUTIONS = `for i in range(100):
    start = time.time()
    e = dict(id=f"x{i}", run="r-big", session="k-9", step=f"s{i}", cell_id=None, key=None,
        status="running", start=start, end=None, duration_s=None, saved_s=0.0, reason=None)
    big.send(dict(type="execution", execution=e))
    big.send(dict(type="execution", execution=dict(e, status="live", end=start + 0.01,
        duration_s=0.01)))
    time.sleep(0.01)`;

/** A notebook of 500 step cells, led by two cells that feed the sidebar synthetic data. */
function writeBigNotebook(file: string): void {
  const cell = (source: string, i: number) => ({
    cell_type: 'code',
    execution_count: null,
    id: `big-${i}`,
    metadata: {},
    outputs: [],
    source
  });
  const cells = [cell(SEND_SNAPSHOT, 0), cell(SEND_EXECUTIONS, 1)];
  for (let i = 0; i < 500; i++) {
    cells.push(cell(`%%step s${i}\nx${i} = ${i}`, i + 2));
  }
  const nb = {
    cells,
    metadata: {
      kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' }
    },
    nbformat: 4,
    nbformat_minor: 5
  };
  fs.writeFileSync(file, JSON.stringify(nb));
}

export default async function globalSetup(): Promise<void> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-ui-'));
  const root = path.join(tmp, 'root');
  fs.mkdirSync(root);
  const notebooks = path.join(__dirname, 'notebooks');
  for (const name of fs.readdirSync(notebooks)) {
    fs.copyFileSync(path.join(notebooks, name), path.join(root, name));
  }
  writeBigNotebook(path.join(root, 'big.ipynb'));
  // the same steps for Notebook 7, and a demo notebook whose step names must be readable
  // (in a folder of its own: its store, beside it, must not serve the Lab tests' steps)
  fs.mkdirSync(path.join(root, 'nb7'));
  fs.copyFileSync(path.join(notebooks, 'steps.ipynb'), path.join(root, 'nb7', 'steps.ipynb'));
  fs.copyFileSync(path.join(notebooks, 'carry.ipynb'), path.join(root, 'nb7', 'carry.ipynb'));
  const demos = path.resolve(__dirname, '..', '..', 'demo_notebooks');
  fs.copyFileSync(path.join(demos, '05_explain.ipynb'), path.join(root, '05_explain.ipynb'));
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
