import * as fs from 'fs';

import { STATE_FILE } from './global-setup';

/** Stop the JupyterLab started by global-setup.ts (its whole process group). */
export default async function globalTeardown(): Promise<void> {
  if (!fs.existsSync(STATE_FILE)) {
    return;
  }
  const { pid, tmp } = JSON.parse(fs.readFileSync(STATE_FILE, 'utf8'));
  fs.rmSync(STATE_FILE);
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    try {
      process.kill(-pid, 0);
    } catch {
      break; // gone
    }
    await new Promise(res => setTimeout(res, 100));
  }
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already stopped
  }
  if (!process.env.RC_KEEP_TMP) {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
