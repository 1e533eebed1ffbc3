/**
 * Vitest global setup: a broker for the run's shared Kubernetes control plane. It starts
 * nothing up front; the first test file that calls `sharedControlPlane()` asks the broker
 * (over loopback HTTP), which starts the control plane once and hands every later caller
 * the same endpoint. The control plane is stopped when the run ends.
 */
import { createServer, type Server } from 'node:http';
import { type ControlPlane, SHARED_BROKER_ENV, startControlPlane } from './kube';

export default async function setup(): Promise<() => Promise<void>> {
  let controlPlane: Promise<ControlPlane> | undefined;
  const server: Server = createServer((req, res) => {
    if (req.url !== '/control-plane') {
      res.writeHead(404).end(`unknown path ${req.url}`);
      return;
    }
    controlPlane ??= startControlPlane();
    controlPlane.then(
      (cp) => {
        const { kubeconfigPath, server: apiServer, dir, tls } = cp;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kubeconfigPath, server: apiServer, dir, tls }));
      },
      (err: unknown) => res.writeHead(500).end(err instanceof Error ? err.message : String(err)),
    );
  });
  // Starting a control plane takes longer than Node's default request timeouts allow for.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('control-plane broker: no port');
  process.env[SHARED_BROKER_ENV] = `http://127.0.0.1:${addr.port}`;

  return async () => {
    server.close();
    if (controlPlane) await (await controlPlane.catch(() => undefined))?.stop();
  };
}
