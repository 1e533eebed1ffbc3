/**
 * A real kube-apiserver with virt-api behind its aggregator and webhooks, and no node: a
 * recording HTTPS stand-in answers as every node's virt-handler (200 `{}`, upgrades
 * refused), so a test sees exactly which handler calls virt-api made. For the
 * authorization tests (virt-api-authz, virt-api-node-restriction), which need the API
 * server's authentication, RBAC and proxying but no guest.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import type { KubeClient } from '../../src/controllers/runtime/kube/client';
import { startVirtApi, type VirtApi } from '../../src/controllers/virt-api/server';
import { createCA, createLeaf } from '../../src/controllers/virt-operator/certificates';
import { type ControlPlane, startControlPlane } from '../support/kube';
import { type Ran, registerVirtApi, virtApiPki, withCrds } from './virt-api-cluster';

/** The running pieces. */
export interface BareVirtApi {
  cp: ControlPlane;
  client: KubeClient;
  api: VirtApi;
  /** The upload-token signer's certificate (verifies the tokens virt-api signs). */
  signerCert: string;
  /** `METHOD path` of every request the stand-in handler received. */
  handlerCalls: string[];
  k(args: string[], kubeconfig?: string): Promise<Ran>;
  apply(objects: unknown[]): Promise<Ran>;
  close(): Promise<void>;
}

/** Starts kube-apiserver (no controller manager, no scheduler), the CRDs and virt-api. */
export async function startBareVirtApi(): Promise<BareVirtApi> {
  const cp = await startControlPlane({ controllerManager: false, scheduler: false });
  const { k, apply, client } = await withCrds(cp);
  const { ca, serving, handlerServing, apiClient } = virtApiPki(cp.dir);
  const handlerCalls: string[] = [];
  const handler = https.createServer(
    { cert: readFileSync(handlerServing.cert), key: readFileSync(handlerServing.key) },
    (req, res) => {
      handlerCalls.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    },
  );
  handler.on('upgrade', (req, socket) => {
    handlerCalls.push(`UPGRADE ${req.url}`);
    socket.destroy();
  });
  await new Promise<void>((r) => handler.listen(0, '127.0.0.1', () => r()));
  // The upload-token signer (ECDSA P-256, as the install's leaves): UploadTokenRequests are answered.
  const signer = await createLeaf(
    await createCA('signer-ca', new Date(), 86_400_000),
    { commonName: 'signer', usage: 'client' },
    new Date(),
    3_600_000,
  );
  writeFileSync(join(cp.dir, 'kubevirt-pki', 'signer.key'), signer.key);

  const api = await startVirtApi({
    client,
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () =>
      createClusterConfig({ developerConfiguration: { useEmulation: true } }, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    privilegedUsers: ['kubevirt-ts-admin'],
    uploadTokenSignerKeyFile: join(cp.dir, 'kubevirt-pki', 'signer.key'),
    handler: {
      tls: { ...apiClient, ca: ca.cert },
      port: (handler.address() as { port: number }).port,
      resolveHandler: async () => '127.0.0.1',
    },
  });
  await registerVirtApi(apply, (a) => k(a), api.port, readFileSync(ca.cert, 'utf8'));
  return {
    cp,
    client,
    api,
    signerCert: signer.cert,
    handlerCalls,
    k,
    apply,
    close: async () => {
      await api.close();
      handler.close();
      client.close();
      await cp.stop();
    },
  };
}

/** A VMI the webhooks admit (no guest runs: there is no node). */
export function bareVmi(ns: string, name: string): Record<string, unknown> {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name, namespace: ns },
    spec: {
      domain: {
        devices: { disks: [{ name: 'root', disk: {} }], autoattachGraphicsDevice: true },
        resources: { requests: { memory: '64Mi' } },
      },
      volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
    },
  };
}
