/**
 * A real control plane with virt-api behind the aggregator, for the virt-api end-to-end
 * tests: kube-apiserver (aggregation layer on), the CRDs, a node (virt-controller,
 * virt-handler, launchers on the system libvirtd) with the handler's mTLS REST server,
 * virt-api in this process on 127.0.0.1, the APIService on an ExternalName Service
 * pointing at it, and the webhook configurations with url clientConfigs. See
 * virt-api.test.ts for why ExternalName.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path, { join } from 'node:path';
import { expect } from 'vitest';
import { crdsDir } from '../../scripts/gen-crds';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { HANDLER_SERVER_CN } from '../../src/controllers/virt-api/handler-client';
import { startVirtApi, type VirtApi } from '../../src/controllers/virt-api/server';
import { type HandlerRestServer, serveHandlerRest } from '../../src/controllers/virt-handler/rest-server';
import { virtApiComponents } from '../../src/controllers/virt-operator/components/virt-api';
import { type ControlPlane, kubeBinDir, startControlPlane } from '../support/kube';
import { type CertFiles, issue, makeCa } from '../support/tls-certs';
import { NodeHarness } from './node-harness';

/** kubectl of the pinned Kubernetes build. */
export const kubectl = path.join(kubeBinDir, 'kubectl');

/** A command's outcome. */
export interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command without blocking the event loop (virt-api answers in this process). */
export function runAsync(cmd: string, args: string[], stdin?: string): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('latin1');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('close', (status) => resolve({ status, stdout, stderr }));
    child.stdin.end(stdin);
  });
}

/** The running pieces. */
export interface VirtApiCluster {
  cp: ControlPlane;
  client: KubeClient;
  api: VirtApi;
  rest: HandlerRestServer;
  node: NodeHarness;
  ca: CertFiles;
  /** kubectl with the admin's (or another) kubeconfig. */
  k(args: string[], kubeconfig?: string): Promise<Ran>;
  /** kubectl apply of a List of these objects. */
  apply(objects: unknown[]): Promise<Ran>;
  /** Stops everything; `domain` is the libvirt domain the node must remove. */
  close(domain: string): Promise<void>;
}

/** kubectl against a control plane, `apply` of a List, and a client with upstream's QPS. */
export interface CrdControlPlane {
  k(args: string[], kubeconfig?: string): Promise<Ran>;
  apply(objects: unknown[]): Promise<Ran>;
  client: KubeClient;
}

/** Applies the CRDs to `cp`, waits for the VM and VMI kinds, and gives its kubectl helpers. */
export async function withCrds(cp: ControlPlane): Promise<CrdControlPlane> {
  const k = (args: string[], kubeconfig = cp.kubeconfigPath) =>
    runAsync(kubectl, ['--kubeconfig', kubeconfig, ...args]);
  const apply = async (objects: unknown[]) => {
    const file = join(cp.dir, `objs-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    return k(['apply', '-f', file]);
  };
  const crds = await k(['apply', '-f', crdsDir]);
  expect(crds.status, crds.stderr).toBe(0);
  const waited = await k([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/virtualmachines.kubevirt.io',
    'crd/virtualmachineinstances.kubevirt.io',
  ]);
  expect(waited.status, waited.stderr).toBe(0);
  return { k, apply, client: KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 200, burst: 400 }) };
}

/**
 * The install's CA and the leaves virt-api's tests use: virt-api's serving pair, the
 * handler's serving pair (its CN is what virt-api checks) and the handler client pair.
 */
export function virtApiPki(dir: string): {
  ca: CertFiles;
  serving: CertFiles;
  handlerServing: CertFiles;
  apiClient: CertFiles;
} {
  const pki = join(dir, 'kubevirt-pki');
  const ca = makeCa(pki, 'kubevirt-ca');
  return {
    ca,
    serving: issue(pki, ca, 'virt-api', 'virt-api', ['IP:127.0.0.1', 'DNS:virt-api.kubevirt.svc']),
    handlerServing: issue(pki, ca, 'handler', HANDLER_SERVER_CN, ['IP:127.0.0.1']),
    apiClient: issue(pki, ca, 'api-client', 'kubevirt.io:system:client:virt-handler'),
  };
}

/** Starts the control plane, the node and virt-api, and registers virt-api with the API server. */
export async function startVirtApiCluster(nodeName: string): Promise<VirtApiCluster> {
  const cp = await startControlPlane({ controllerManager: true, scheduler: true });
  const { k, apply, client } = await withCrds(cp);
  const { ca, serving, handlerServing, apiClient } = virtApiPki(cp.dir);

  const node = new NodeHarness({ client, nodeName, bindPending: false });
  await node.start();
  const rest = await serveHandlerRest({
    launchers: node.handler!,
    host: '127.0.0.1',
    port: 0,
    tls: { ...handlerServing, ca: ca.cert },
  });
  const api = await startVirtApi({
    client,
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () =>
      createClusterConfig({ developerConfiguration: { useEmulation: true } }, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    // The controller and handler here act as the admin (in a cluster: KubeVirt's service accounts).
    privilegedUsers: ['kubevirt-ts-admin'],
    handler: {
      tls: { ...apiClient, ca: ca.cert },
      port: rest.port,
      resolveHandler: async () => '127.0.0.1',
    },
  });

  await registerVirtApi(apply, k, api.port, readFileSync(ca.cert, 'utf8'));
  return {
    cp,
    client,
    api,
    rest,
    node,
    ca,
    k,
    apply,
    close: async (domain: string) => {
      await node.close(domain);
      await api.close();
      await rest.close();
      client.close();
      await cp.stop();
    },
  };
}

/**
 * Registers a virt-api listening on 127.0.0.1:`port` with the API server: its APIService
 * on an ExternalName Service (see virt-api.test.ts for why) and its webhook
 * configurations with url clientConfigs; waits until the APIService is Available.
 */
export async function registerVirtApi(
  apply: (objects: unknown[]) => Promise<Ran>,
  k: (args: string[]) => Promise<Ran>,
  port: number,
  caBundle: string,
): Promise<void> {
  const rendered = virtApiComponents({
    namespace: 'kubevirt',
    image: 'kubevirt-ts:dev',
    caBundle,
    webhookUrl: `https://127.0.0.1:${port}`,
  });
  const pick = (kind: string) => rendered.filter((o) => o.kind === kind);
  // subresources.kubevirt.io and CDI's upload.cdi.kubevirt.io, both at virt-api's port.
  const apiServices = pick('APIService') as Array<{ spec: { service: { port: number } } }>;
  for (const a of apiServices) a.spec.service.port = port;
  const applied = await apply([
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kubevirt' } },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'virt-api', namespace: 'kubevirt' },
      spec: { type: 'ExternalName', externalName: '127.0.0.1', ports: [{ port, protocol: 'TCP' }] },
    },
    ...apiServices,
    ...pick('MutatingWebhookConfiguration'),
    ...pick('ValidatingWebhookConfiguration'),
  ]);
  expect(applied.status, applied.stderr).toBe(0);
  const avail = await k([
    'wait',
    '--for=condition=Available',
    '--timeout=60s',
    'apiservice/v1.subresources.kubevirt.io',
    'apiservice/v1beta1.upload.cdi.kubevirt.io',
  ]);
  expect(avail.status, avail.stderr).toBe(0);
}
