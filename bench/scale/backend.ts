/**
 * The API the scale benchmark runs against: the real control plane (etcd, kube-apiserver,
 * kube-scheduler, kube-controller-manager from the test binaries, with the generated CRDs)
 * or the embedded store served on a unix socket in this process. Each tells its parts how
 * to connect, counts VMI writes at the API, and reports the API server's RSS.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { crdsDir } from '../../scripts/gen-crds';
import { type EmbeddedServer, serveEmbeddedStore } from '../../src/controllers/runtime/embedded/server';
import { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import type { ObjectClient, ResourceType } from '../../src/controllers/runtime/types';
import { kubeBinDir, startControlPlane } from '../../test/support/kube';
import { UNLIMITED } from './connect';
import { apiserverPid, rssMb } from './proc';
import { requestTotal, VMI_WRITE_VERBS } from './stats';

export type BackendKind = 'apiserver' | 'embedded';

/** A started backend. */
export interface Backend {
  kind: BackendKind;
  /** Arguments telling a part where the API is (`--kubeconfig F` or `--socket P`). */
  connectArgs: string[];
  /** A client for this process (creating VMs, watching VMIs). */
  client: KubeClient;
  /** Updates, patches and applies of VMIs so far, any subresource, any client. */
  vmiWrites(): Promise<number>;
  /** What counts the writes, for the report. */
  writesCountedBy: string;
  /** RSS of the API server process (for embedded: this process, which serves the store). */
  apiserverRss(): { rss: number; peak: number };
  /** The API server process's pid (for embedded: this process). */
  apiserverPid: number | undefined;
  stop(): Promise<void>;
}

/** Client rate limits of the benchmark's own creates and watches on the API server (upstream's controller's). */
const CLIENT = { qps: 200, burst: 400 };

export async function startBackend(kind: BackendKind, workDir: string): Promise<Backend> {
  return kind === 'apiserver' ? startApiserver() : startEmbedded(workDir);
}

async function startApiserver(): Promise<Backend> {
  const cp = await startControlPlane();
  try {
    const kubectl = (...a: string[]) => {
      const r = spawnSync(join(kubeBinDir, 'kubectl'), ['--kubeconfig', cp.kubeconfigPath, ...a], {
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`kubectl ${a.join(' ')}: ${r.stderr}`);
    };
    kubectl('apply', '-f', crdsDir);
    kubectl(
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/virtualmachines.kubevirt.io',
      'crd/virtualmachineinstances.kubevirt.io',
    );
  } catch (err) {
    await cp.stop();
    throw err;
  }
  const pid = apiserverPid(new URL(cp.server).port);
  return {
    kind: 'apiserver',
    connectArgs: ['--kubeconfig', cp.kubeconfigPath],
    client: KubeClient.fromKubeconfig(cp.kubeconfigPath, CLIENT),
    async vmiWrites() {
      const m = await cp.get('/metrics');
      if (m.status !== 200) throw new Error(`GET /metrics: ${m.status}`);
      return requestTotal(m.body, 'virtualmachineinstances', VMI_WRITE_VERBS);
    },
    writesCountedBy:
      'kube-apiserver apiserver_request_total{resource="virtualmachineinstances",verb=~"PUT|PATCH|APPLY"}',
    apiserverRss: () => rssMb(pid),
    apiserverPid: pid,
    stop: () => cp.stop(),
  };
}

const WRITES = ['update', 'updateStatus', 'patch'] as const;

async function startEmbedded(workDir: string): Promise<Backend> {
  const store = await EmbeddedStore.open();
  let writes = 0;
  // Count at the API: every update, status update and patch of a VMI the server receives.
  const counted = store as unknown as Record<string, (type: ResourceType, ...rest: unknown[]) => unknown>;
  for (const m of WRITES) {
    const orig = counted[m].bind(store);
    counted[m] = (type: ResourceType, ...rest: unknown[]) => {
      if (type.plural === 'virtualmachineinstances') writes++;
      return orig(type, ...rest);
    };
  }
  const socket = join(workDir, 'store.sock');
  const server: EmbeddedServer = await serveEmbeddedStore(store, socket);
  return {
    kind: 'embedded',
    connectArgs: ['--socket', socket],
    client: KubeClient.fromSocket(socket, UNLIMITED),
    vmiWrites: async () => writes,
    writesCountedBy: "a counter wrapping the embedded store's update, updateStatus and patch of VMIs",
    apiserverRss: () => rssMb(process.pid),
    apiserverPid: process.pid,
    async stop() {
      await server.close();
      await (store as unknown as ObjectClient & { close(): Promise<void> }).close();
    },
  };
}
