/**
 * `kubevirt-ts virt-exportserver`: the VirtualMachineExport pod's command (upstream's
 * virt-exportserver). Reads the environment the export controller sets (CERT_FILE,
 * KEY_FILE, TOKEN_FILE, DEADLINE, the VOLUMEi_* paths, common/export-paths.ts), serves
 * until the deadline, then exits 0 (the pod Succeeds; the controller replaces it while
 * the export lives). Loaded before commander (see kubevirt-ts.ts) as its own
 * self-contained bundle: it runs from the launcher's image, which has no node_modules.
 */
import { EXPORT_SERVER_PORT, serverPathsFromEnv } from '../controllers/common/export-paths';
import { startExportServer } from '../controllers/virt-exportserver/server';

function need(env: NodeJS.ProcessEnv, name: string): string {
  const v = env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

/** Runs the server from `env` until its deadline. */
export async function exportServerMain(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const log = (line: string) => console.log(JSON.stringify({ component: 'virt-exportserver', msg: line }));
  try {
    const deadline = env.DEADLINE ? new Date(env.DEADLINE) : undefined;
    if (deadline && Number.isNaN(deadline.getTime()))
      throw new Error(`DEADLINE: ${env.DEADLINE} is not a time`);
    const paths = serverPathsFromEnv(env);
    if (!paths.volumes.length && !paths.vmUri) throw new Error('nothing to export: no VOLUMEi_EXPORT_PATH');
    const s = await startExportServer({
      paths,
      certFile: need(env, 'CERT_FILE'),
      keyFile: need(env, 'KEY_FILE'),
      tokenFile: need(env, 'TOKEN_FILE'),
      deadline,
      port: EXPORT_SERVER_PORT,
      log,
    });
    process.once('SIGTERM', () => void s.close());
    await s.closed;
  } catch (e) {
    log((e as Error).message);
    process.exitCode = 1;
  }
}
