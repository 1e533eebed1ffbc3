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
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    // Brokers one shared Kubernetes control plane per run, started on first use.
    globalSetup: ['test/support/kube-global-setup.ts'],
    // Integration tests talk to real libvirtd, QEMU and kube-apiserver: give them room.
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Two cores: more workers only slow the QEMU guests down.
    maxWorkers: 2,
    reporters: ['default'],
  },
});
