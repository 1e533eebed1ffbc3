import { defineConfig } from 'tsup';

// One entry per public subpath export (see package.json "exports") plus the two bins.
// Splitting keeps shared code in chunks, so importing `kubevirt-ts/converter` never
// loads gRPC or the Kubernetes client.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'api/index': 'src/api/index.ts',
    'converter/index': 'src/converter/index.ts',
    'drivers/index': 'src/drivers/index.ts',
    'controllers/index': 'src/controllers/index.ts',
    'testing/index': 'src/testing/index.ts',
    'cli/kubevirt-ts': 'src/cli/kubevirt-ts.ts',
    'cli/virtctl': 'src/cli/virtctl.ts',
  },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: {
    entry: {
      index: 'src/index.ts',
      'api/index': 'src/api/index.ts',
      'converter/index': 'src/converter/index.ts',
      'drivers/index': 'src/drivers/index.ts',
      'controllers/index': 'src/controllers/index.ts',
      'testing/index': 'src/testing/index.ts',
    },
  },
  splitting: true,
  sourcemap: true,
  clean: true,
  shims: false,
});
