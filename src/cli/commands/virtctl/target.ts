/**
 * Where a virtctl command acts: the running local mode (its store socket and local
 * subresource API), or a real cluster through a kubeconfig. On a cluster, VMI
 * subresources (pause, unpause, softreboot, guestosinfo, console, vnc) go to KubeVirt's
 * `subresources.kubevirt.io` API, which virt-api serves (`kubevirt-ts virt-api` or
 * upstream's); start, stop and restart patch the VM instead, the change virt-api's
 * handlers make (runStrategy and status.stateChangeRequests).
 */
import { KubeConfig } from '@kubernetes/client-node';
import type { Command } from 'commander';
import { KubeClient } from '../../../controllers/runtime/kube/client';
import { HttpTransport } from '../../../controllers/runtime/kube/transport';
import type { ObjectClient } from '../../../controllers/runtime/types';
import { LocalClient } from '../../local/local-client';
import { defaultStateDir, statePaths } from '../../local/state-dir';

/** The cluster does not serve `subresources.kubevirt.io` (no virt-api). */
export class NotServedError extends Error {}

/** Options every virtctl command takes. */
export interface TargetOptions {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  stateDir?: string;
}

/** A connection to local mode or a cluster. */
export interface Target {
  client: ObjectClient;
  namespace: string;
  /** `local` or the cluster's URL, for messages. */
  where: string;
  local?: LocalClient;
  /** The cluster's kubeconfig (websocket subresources need its credentials). */
  kubeConfig?: KubeConfig;
  /** Calls a subresource of `subresources.kubevirt.io/v1` (the same call as local mode's client). */
  subresource: LocalClient['subresource'];
  /** A VMI subresource GET whose answer is bytes (the screenshot); on a cluster only. */
  subresourceBytes?(
    namespace: string,
    name: string,
    sub: string,
    query?: Record<string, string>,
  ): Promise<{ contentType: string; body: Buffer }>;
  close(): void;
}

/** Adds the target options to a command. */
export function withTargetOptions(cmd: Command): Command {
  return cmd
    .option('--kubeconfig <file>', 'act on the cluster of this kubeconfig instead of local mode')
    .option('--context <name>', 'kubeconfig context')
    .option('-n, --namespace <ns>', 'namespace')
    .option('--state-dir <dir>', 'local mode state directory', defaultStateDir());
}

/** Opens the target the options name. */
export function openTarget(o: TargetOptions): Target {
  if (o.kubeconfig) {
    const kc = new KubeConfig();
    kc.loadFromFile(o.kubeconfig);
    if (o.context) kc.setCurrentContext(o.context);
    const client = new KubeClient({ kubeConfig: kc });
    const transport = new HttpTransport({ kubeConfig: kc }, 'kubevirt-ts-virtctl');
    const namespace = o.namespace ?? client.namespace ?? 'default';
    return {
      client,
      namespace,
      kubeConfig: kc,
      where: transport.describe(),
      subresource: async <T>(
        method: 'GET' | 'PUT',
        ns: string,
        name: string,
        sub: string,
        body?: unknown,
        resource = 'virtualmachineinstances',
      ) => {
        const path = `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(ns)}/${resource}/${encodeURIComponent(name)}/${sub}`;
        const res = await transport.request({
          method,
          path,
          body,
          contentType: body ? 'application/json' : undefined,
        });
        if (res.status === 404 && /page not found|the server could not find/i.test(res.body)) {
          throw new NotServedError(
            `${sub}: the cluster does not serve subresources.kubevirt.io (install virt-api: kubevirt-ts virt-api or upstream's)`,
          );
        }
        if (res.status >= 300) {
          let msg = res.body;
          try {
            msg = (JSON.parse(res.body) as { message?: string }).message ?? msg;
          } catch {}
          throw new Error(`${sub} ${ns}/${name}: ${msg}`);
        }
        return (res.body ? JSON.parse(res.body) : {}) as T;
      },
      subresourceBytes: async (ns, name, sub, query) => {
        const path = `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(ns)}/virtualmachineinstances/${encodeURIComponent(name)}/${sub}`;
        const { res } = await transport.stream({ method: 'GET', path, query });
        const chunks: Buffer[] = [];
        for await (const c of res) chunks.push(c as Buffer);
        const body = Buffer.concat(chunks);
        const contentType = String(res.headers['content-type'] ?? '');
        if ((res.statusCode ?? 0) >= 300) {
          let msg = body.toString('utf8');
          try {
            msg = (JSON.parse(msg) as { message?: string }).message ?? msg;
          } catch {}
          throw new Error(`${sub} ${ns}/${name}: ${msg}`);
        }
        return { contentType, body };
      },
      close: () => {
        client.close();
        transport.close();
      },
    };
  }
  const local = new LocalClient(statePaths(o.stateDir ?? defaultStateDir()));
  return {
    client: local.store,
    namespace: o.namespace ?? 'default',
    where: 'local',
    local,
    subresource: (method, ns, name, sub, body, resource) =>
      local.subresource(method, ns, name, sub, body, resource),
    close: () => local.close(),
  };
}

/** Runs `fn` with the target, closing it after. */
export async function withTarget<T>(o: TargetOptions, fn: (t: Target) => Promise<T>): Promise<T> {
  const t = openTarget(o);
  try {
    return await fn(t);
  } finally {
    t.close();
  }
}
