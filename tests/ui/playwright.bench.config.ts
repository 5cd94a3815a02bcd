import { defineConfig } from '@playwright/test';

import tests from './playwright.config';

/** The browser benchmarks (bench/*.bench.ts), on the server global-setup.ts starts. */
export default defineConfig({
  ...tests,
  testDir: './bench',
  testMatch: '*.bench.ts',
  outputDir: './bench-results'
});
