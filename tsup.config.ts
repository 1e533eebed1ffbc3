import { defineConfig, type Options } from 'tsup';

// Two builds. The library: one entry per public subpath export (see package.json
// "exports") plus the two bins; splitting keeps shared code in chunks, so importing
// `kubevirt-ts/converter` never loads gRPC or the Kubernetes client.
// The launcher: one self-contained, minified file with its dependencies inlined, because
// one launcher process runs per VM and a single small module costs far less heap than
// the chunk graph plus node_modules (see src/cli/virt-launcher.ts, docs/benchmarks.md).
// `npm run build` empties dist/ first; neither build cleans, so they cannot race.
// `npm run build:run` (what `npm run up` uses) skips the type declarations: running the
// CLI needs none, and generating them is most of a build (111 s of 117 s on the loaded
// 2-core host, against 5 s for the JavaScript).
/** The public subpath exports, which also get type declarations. */
const libraryEntries = {
  index: 'src/index.ts',
  'api/index': 'src/api/index.ts',
  'converter/index': 'src/converter/index.ts',
  'drivers/index': 'src/drivers/index.ts',
  'controllers/index': 'src/controllers/index.ts',
  'testing/index': 'src/testing/index.ts',
};

/**
 * One minified single-file build of `src/cli/<name>.ts` with its dependencies inlined
 * (`inline`: the ones to inline, every one by default).
 */
function selfContained(name: string, inline: RegExp = /.*/): Options {
  return {
    entry: { [`cli/${name}`]: `src/cli/${name}.ts` },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    splitting: false,
    noExternal: [inline],
    minify: true,
    sourcemap: true,
    clean: false,
    // Inlined CommonJS dependencies (grpc-js) call require() for Node's built-ins.
    banner: {
      js: "import { createRequire as __kvtsRequire } from 'node:module'; const require = __kvtsRequire(import.meta.url);",
    },
  };
}

export default defineConfig([
  {
    entry: {
      ...libraryEntries,
      'cli/kubevirt-ts': 'src/cli/kubevirt-ts.ts',
      'cli/virtctl': 'src/cli/virtctl.ts',
    },
    format: ['esm'],
    target: 'node20',
    platform: 'node',
    dts: process.env.KUBEVIRT_TS_BUILD_NO_DTS === '1' ? false : { entry: libraryEntries },
    splitting: true,
    sourcemap: true,
    clean: false,
    shims: false,
  },
  // virt-api: one server process, the same way; client-node stays external (it is loaded
  // only for kubeconfig exec/auth-provider users, see controllers/runtime/kube/kubeconfig.ts).
  selfContained('virt-api', /^(?!@kubernetes\/client-node)/),
  selfContained('virt-launcher'),
  // cdi-importer: the DataVolume importer pod's command, in the launcher's image (dist/ but
  // no node_modules), so self-contained like virt-probe.
  selfContained('cdi-importer'),
  // cdi-uploadserver: the DataVolume upload pod's server, in the launcher's image too.
  selfContained('cdi-uploadserver'),
  // virt-exportserver: the VirtualMachineExport pod's server, in the launcher's image too.
  selfContained('virt-exportserver'),
  // virt-probe: run by the kubelet in the launcher's container (whose image has dist/ but
  // no node_modules) every probe period, so self-contained and small like the launcher.
  selfContained('virt-probe'),
]);
