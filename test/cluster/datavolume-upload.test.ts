/**
 * Issue 25's upload proof on the real one-node cluster: the components from the manifests
 * (virt-controller running CDI's upload controller, virt-api serving UploadTokenRequests
 * behind the `v1beta1.upload.cdi.kubevirt.io` APIService, cdi-uploadproxy), the project's
 * CSI driver in this process with the real csi-provisioner (test/cluster/csi-stack.ts, as
 * datavolume-vm.test.ts). Our CLI's `virtctl image-upload dv ... --image-path <the tiny
 * guest's qcow2>` through a port-forward to the upload proxy: the DataVolume passes
 * UploadReady and ends Succeeded, and its claim's `disk.img` (read by a pod) has the
 * sha256 of `qemu-img convert -O raw` of the image, grown with zeros to the asked size.
 * The proxy refuses a wrong token (401) and takes one an UploadTokenRequest (CDI's
 * example manifest) gave; CDI's upload example DataVolume reaches UploadReady.
 *
 * The driver's one name registers once with a kubelet: this file takes the host lock
 * `csi-driver` for its whole run, as the other CSI cluster test files do.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import { type Forward, forwardPort } from '../../src/cli/commands/virtctl/vmexport-transfer';
import { DRIVER_NAME } from '../../src/controllers/csi-driver/identity-service';
import { sharedCluster } from '../support/cluster';
import { installComponents } from '../support/cluster-install';
import {
  createTestNamespace,
  deleteNamespaceAndWait,
  waitForDriverPvsDeleted,
} from '../support/cluster-namespace';
import { kubectlWith } from '../support/cluster-pods';
import { bootDiskPath } from '../support/guest';
import { acquireHostLocks } from '../support/host-lock';
import { waitFor } from '../support/wait';
import { type CsiStack, csiClusterTestsEnabled, startCsiStack } from './csi-stack';

const enabled = csiClusterTestsEnabled('DataVolume uploads on the cluster');
const NS = 'cluster-upload';
const CDI = { group: 'cdi.kubevirt.io', version: 'v1beta1', plural: 'datavolumes' };
const VIRTCTL = resolve('dist/cli/virtctl.js');
const EXAMPLES = resolve('../shared/cdi/examples');

describe.skipIf(!enabled)('DataVolume uploads on the real cluster', () => {
  let info: ClusterInfo;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let csi: CsiStack | undefined;
  let fwd: Forward | undefined;
  let dir = '';
  let kubectl: (...args: string[]) => string;
  let releaseLocks: (() => void) | undefined;

  const readDv = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...CDI, namespace: NS, name }).catch(() => undefined)) as
      | DataVolume
      | undefined;
  const diagnose = async () => {
    const pods = (await core.listNamespacedPod({ namespace: NS })).items.map(
      (p) =>
        `${p.metadata?.name} ${p.status?.phase} ${JSON.stringify(p.status?.containerStatuses?.map((c) => c.state))}`,
    );
    const evs = (await core.listNamespacedEvent({ namespace: NS })).items.map(
      (e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`,
    );
    const logs = (sel: string) => {
      try {
        return kubectl('logs', '-n', 'kubevirt', '-l', sel, '--tail=30', '--prefix');
      } catch (e) {
        return String(e);
      }
    };
    return `pods:\n${pods.join('\n')}\nevents:\n${evs.join('\n')}\nvirt-controller:\n${logs('kubevirt.io=virt-controller')}\ncdi-uploadproxy:\n${logs('kubevirt.io=cdi-uploadproxy')}`;
  };
  const dvPhase = (name: string, want: string, ms = 240_000) =>
    waitFor(
      `DataVolume ${name} ${want}`,
      async () => {
        const d = await readDv(name);
        if (d?.status?.phase === 'Failed')
          throw new Error(`DataVolume ${name} failed: ${JSON.stringify(d.status)}`);
        return d?.status?.phase === want ? d : undefined;
      },
      ms,
      500,
    ).catch(async (e) => {
      throw new Error(`${e}\n${await diagnose()}`);
    });

  /** The built virtctl in a child process (the driver runs in this one). */
  const virtctl = (args: string[], timeoutMs = 300_000) =>
    new Promise<string>((res, rej) => {
      const child = spawn(
        process.execPath,
        [VIRTCTL, ...args, '--kubeconfig', info.kubeconfigPath, '-n', NS],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        out += d;
      });
      const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', (code) => {
        clearTimeout(t);
        if (code === 0) res(out);
        else rej(new Error(`virtctl ${args.slice(0, 2).join(' ')} exited ${code}: ${out.slice(-3000)}`));
      });
    });

  /** A request to the upload proxy through the port-forward: its status. */
  const toProxy = (method: string, path: string, token: string) =>
    new Promise<number>((res, rej) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: fwd!.port,
          method,
          path,
          rejectUnauthorized: false,
          headers: { authorization: `Bearer ${token}`, 'content-length': '0' },
        },
        (r) => {
          r.resume();
          r.on('end', () => res(r.statusCode ?? 0));
        },
      );
      req.on('error', rej);
      req.end();
    });

  beforeAll(async () => {
    info = await sharedCluster();
    releaseLocks = await acquireHostLocks(['cluster-components', 'csi-driver'], 900_000);
    kubectl = kubectlWith(info.kubeconfigPath);
    kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    dir = mkdtempSync(join(tmpdir(), 'kvts-upload-'));
    installComponents(info, dir, kubectl);
    csi = await startCsiStack(info, kc);
    await createTestNamespace(core, NS);
    const proxyPod = await waitFor(
      'cdi-uploadproxy ready',
      async () =>
        (
          await core.listNamespacedPod({
            namespace: 'kubevirt',
            labelSelector: 'kubevirt.io=cdi-uploadproxy',
          })
        ).items.find((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
      180_000,
      1000,
    ).catch(async (e) => {
      throw new Error(`${e}\n${await diagnose()}`);
    });
    fwd = await forwardPort(kc, 'kubevirt', proxyPod.metadata?.name ?? '', 8443, 0);
  }, 1_200_000);

  afterAll(async () => {
    await fwd?.close();
    if (core) {
      await deleteNamespaceAndWait(core, NS, 180_000);
      await waitForDriverPvsDeleted(core, DRIVER_NAME, 120_000, () => csi?.sidecars.logs());
      await waitFor('the pool empty', async () => (await csi?.volumes())?.length === 0, 60_000, 500).catch(
        (e) => process.stderr.write(`${e}\n`),
      );
    }
    try {
      if (dir) kubectl('delete', '--ignore-not-found', '--wait=false', '-f', dir);
    } catch {
      // the cluster goes down next anyway
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
    try {
      await csi?.stop();
    } finally {
      releaseLocks?.();
    }
  }, 400_000);

  it('virtctl image-upload dv: UploadReady, Succeeded, the claim holds the raw image', async () => {
    const started = Date.now();
    const out = await virtctl([
      'image-upload',
      'dv',
      'up-dv',
      '--size',
      '64Mi',
      '--image-path',
      bootDiskPath,
      '--uploadproxy-url',
      `https://127.0.0.1:${fwd!.port}`,
      '--insecure',
    ]).catch(async (e) => {
      throw new Error(`${e}\n${await diagnose()}`);
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    process.stdout.write(`virtctl image-upload of ${bootDiskPath} took ${seconds} s\n`);
    expect(out).toContain(`DataVolume ${NS}/up-dv created`);
    expect(out).toContain('Waiting for PVC up-dv upload pod to be ready...');
    expect(out).toContain(`Uploading ${bootDiskPath} completed successfully`);
    const dv = await dvPhase('up-dv', 'Succeeded');
    expect(dv.status).toMatchObject({ progress: '100.0%', claimName: 'up-dv' });
    const events = (await core.listNamespacedEvent({ namespace: NS })).items
      .filter((e) => e.involvedObject.name === 'up-dv' && e.involvedObject.kind === 'DataVolume')
      .map((e) => e.reason);
    expect(events).toEqual(expect.arrayContaining(['UploadScheduled', 'UploadReady', 'UploadSucceeded']));
    // The upload pod, its Service and Secret are gone.
    await waitFor(
      'upload pod gone',
      async () =>
        (await core.readNamespacedPod({ name: 'cdi-upload-up-dv', namespace: NS }).catch(() => undefined))
          ? undefined
          : true,
      60_000,
      500,
    );
    expect(
      await core.readNamespacedService({ name: 'cdi-upload-up-dv', namespace: NS }).catch(() => undefined),
    ).toBe(undefined);

    // The claim's disk.img, read by a pod: the raw image grown with zeros to its size.
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'reader' },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          automountServiceAccountToken: false,
          securityContext: { runAsUser: 107, runAsGroup: 107, fsGroup: 107 },
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'up-dv', readOnly: true } }],
          containers: [
            {
              name: 'main',
              image: info.images['virt-launcher'],
              imagePullPolicy: 'Never',
              command: [
                'node',
                '-e',
                "const f=require('fs');const b=f.readFileSync('/d/disk.img');console.log(b.length+' '+require('crypto').createHash('sha256').update(b).digest('hex'))",
              ],
              volumeMounts: [{ name: 'd', mountPath: '/d', readOnly: true }],
            },
          ],
        },
      },
    });
    await waitFor(
      'reader done',
      async () => {
        const p = await core.readNamespacedPod({ name: 'reader', namespace: NS });
        if (p.status?.phase === 'Failed')
          throw new Error(`reader failed: ${kubectl('logs', '-n', NS, 'reader')}`);
        return p.status?.phase === 'Succeeded' ? true : undefined;
      },
      120_000,
      500,
    );
    const [size, sum] = kubectl('logs', '-n', NS, 'reader').trim().split(' ') as [string, string];
    const rawFile = join(dir, 'boot.raw');
    execFileSync('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', bootDiskPath, rawFile]);
    const raw = readFileSync(rawFile);
    // The disk is the image grown to the size asked (CDI resizes an uploaded disk), as far
    // as the filesystem's room less its overhead allows.
    expect(Number(size)).toBeGreaterThanOrEqual(raw.length);
    expect(Number(size)).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(Number(size) % 512).toBe(0);
    const want = createHash('sha256')
      .update(raw)
      .update(Buffer.alloc(Number(size) - raw.length))
      .digest('hex');
    expect(sum).toBe(want);
  }, 600_000);

  it("CDI's upload example reaches UploadReady; the proxy refuses a wrong token and takes an UploadTokenRequest's", async (ctx) => {
    if (!existsSync(join(EXAMPLES, 'upload-datavolume.yaml')))
      return ctx.skip(`${EXAMPLES} is absent (CDI's example manifests, ../shared/cdi/SOURCE.md)`);
    const dvText = readFileSync(join(EXAMPLES, 'upload-datavolume.yaml'), 'utf8');
    writeFileSync(join(dir, 'example-dv.yaml'), dvText);
    kubectl('apply', '-n', NS, '-f', join(dir, 'example-dv.yaml'));
    await dvPhase('upload-datavolume', 'UploadReady');
    const tokenReq = parse(readFileSync(join(EXAMPLES, 'upload-datavolume-token.yaml'), 'utf8'));
    tokenReq.metadata.namespace = NS;
    writeFileSync(join(dir, 'example-token.json'), JSON.stringify(tokenReq));
    const answer = JSON.parse(
      kubectl('create', '--validate=false', '-f', join(dir, 'example-token.json'), '-o', 'json'),
    );
    expect(answer.kind).toBe('UploadTokenRequest');
    const token = answer.status.token as string;
    expect(token.split('.')).toHaveLength(3);
    // A wrong token (its signature altered) is refused; a token for another PVC reaches nothing.
    expect(await toProxy('HEAD', '/v1beta1/upload-async', `${token.slice(0, -6)}AAAAAA`)).toBe(401);
    expect(await toProxy('POST', '/v1beta1/upload', 'not-a-token')).toBe(401);
    // The real one passes the proxy and reaches the upload pod (its async probe answers 200).
    expect(await toProxy('HEAD', '/v1beta1/upload-async', token)).toBe(200);
    expect((await readDv('upload-datavolume'))?.status?.phase).toBe('UploadReady');
  }, 400_000);
});
