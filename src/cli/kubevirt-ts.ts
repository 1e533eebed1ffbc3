#!/usr/bin/env node
import { LAUNCHER_SUBCOMMAND } from '../controllers/common/launcher-args';

if (process.argv[2] === LAUNCHER_SUBCOMMAND) {
  // One launcher runs per VM: skip commander and every other command, and load the
  // self-contained launcher bundle (see virt-launcher.ts). The specifier is computed so the
  // build keeps it a separate file instead of folding it into this entry's chunks.
  const entry = new URL('./virt-launcher.js', import.meta.url).href;
  const { launcherMain } = (await import(entry)) as typeof import('./virt-launcher');
  await launcherMain(process.argv.slice(3));
} else if (process.argv[2] === 'virt-probe') {
  // Run by the kubelet every probe period, in the launcher's image (no node_modules): its
  // own self-contained bundle (tsup.config.ts), loaded the way the launcher's is.
  const entry = new URL('./virt-probe.js', import.meta.url).href;
  const { virtProbeMain } = (await import(entry)) as typeof import('./virt-probe');
  await virtProbeMain(process.argv.slice(3));
} else if (process.argv[2] === 'cdi-importer') {
  // The DataVolume importer pod, in the launcher's image (no node_modules): its own bundle.
  const entry = new URL('./cdi-importer.js', import.meta.url).href;
  const { cdiImporterMain } = (await import(entry)) as typeof import('./cdi-importer');
  await cdiImporterMain();
} else if (process.argv[2] === 'cdi-uploadserver') {
  // The DataVolume upload pod, in the launcher's image (no node_modules): its own bundle.
  const entry = new URL('./cdi-uploadserver.js', import.meta.url).href;
  const { uploadServerMain } = (await import(entry)) as typeof import('./cdi-uploadserver');
  await uploadServerMain();
} else if (process.argv[2] === 'virt-exportserver') {
  // The VirtualMachineExport pod, in the launcher's image (no node_modules): its own bundle.
  const entry = new URL('./virt-exportserver.js', import.meta.url).href;
  const { exportServerMain } = (await import(entry)) as typeof import('./virt-exportserver');
  await exportServerMain();
} else if (process.argv[2] === 'virt-api') {
  // One server process: its own bundle without the rest of the CLI (see virt-api.ts).
  const entry = new URL('./virt-api.js', import.meta.url).href;
  const { virtApiMain } = (await import(entry)) as typeof import('./virt-api');
  await virtApiMain(process.argv.slice(3));
} else {
  const { buildProgram } = await import('./program');
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => {
      // User-facing errors carry their own message; never print a stack trace for them.
      process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
