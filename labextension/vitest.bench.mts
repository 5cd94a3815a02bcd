import { defineConfig } from 'vitest/config';

// The sidebar's benchmarks (bench/sidebar_view.py runs them); `npm test` does not.
export default defineConfig({
  test: {
    include: [],
    benchmark: { include: ['bench/**/*.bench.ts'] },
    environment: 'node'
  }
});
