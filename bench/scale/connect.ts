/** How a part of the scale benchmark reaches the API: `--kubeconfig F` or `--socket P`. */
import { KubeClient, type KubeClientOptions } from '../../src/controllers/runtime/kube/client';

export function clientFromArgs(
  values: { kubeconfig?: string; socket?: string },
  o: KubeClientOptions,
): KubeClient {
  if (values.socket) return KubeClient.fromSocket(values.socket, o);
  if (values.kubeconfig) return KubeClient.fromKubeconfig(values.kubeconfig, o);
  throw new Error('--kubeconfig or --socket is required');
}

/**
 * No client-side limit: what every part gets on the embedded store. client-go's token
 * bucket keeps one client from flooding an API server shared by a cluster; the embedded
 * store serves one host's components (local mode's virt-controller calls it in-process,
 * with no client at all), so a limit there only adds waiting.
 */
export const UNLIMITED: KubeClientOptions = {
  qps: Number.POSITIVE_INFINITY,
  burst: Number.POSITIVE_INFINITY,
};

export const connectOptions = { kubeconfig: { type: 'string' }, socket: { type: 'string' } } as const;

/** Exits when the benchmark that started this part is gone (killed without cleaning up). */
export function exitWithParent(): void {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(1);
  }, 2000).unref();
}
