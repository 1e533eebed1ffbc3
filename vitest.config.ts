import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The package's public subpaths resolve to the sources, so examples import
  // `kubevirt-ts/drivers` etc. exactly as an outside user would, without a build first.
  resolve: {
    alias: [
      {
        find: /^kubevirt-ts\/(.+)$/,
        replacement: fileURLToPath(new URL('./src/$1/index.ts', import.meta.url)),
      },
    ],
  },
  test: {
    // `*.serial.test.ts` files disturb shared host services (they restart the system
    // libvirtd), so they run alone, after the parallel run: `VITEST_SERIAL=1 vitest run`.
    include:
      process.env.VITEST_SERIAL === '1'
        ? ['test/**/*.serial.test.ts']
        : ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    exclude: process.env.VITEST_SERIAL === '1' ? [] : ['**/*.serial.test.ts', '**/node_modules/**'],
    // Brokers one shared Kubernetes control plane per run, and one real one-node cluster
    // (test/cluster), each started on first use only.
    globalSetup: ['test/support/kube-global-setup.ts', 'test/support/cluster-global-setup.ts'],
    // Integration tests talk to real libvirtd, QEMU and kube-apiserver: give them room.
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Two cores: more workers only slow the QEMU guests down.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
