import { defineConfig } from '@playwright/test';

/**
 * Browser tests of the sidebar in a real JupyterLab (started by global-setup.ts in a
 * temporary root with copies of notebooks/) and Debian's headless Chromium.
 */
export default defineConfig({
  testDir: './tests',
  globalSetup: './global-setup.ts',
  globalTeardown: './global-teardown.ts',
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 180_000,
  expect: { timeout: 60_000 },
  reporter: [['list']],
  outputDir: './test-results',
  use: {
    viewport: { width: 1400, height: 860 },
    video: 'off',
    trace: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run'
      ]
    }
  }
});
