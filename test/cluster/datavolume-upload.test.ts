/**
 * Issue 25's upload proof on the real one-node cluster: the components from the manifests
 * (virt-controller running CDI's upload controller, virt-api serving UploadTokenRequests
 * behind the `v1beta1.upload.cdi.kubevirt.io` APIService, cdi-uploadproxy), the project's
 * CSI driver in this process with the real csi-provisioner (storageClusterFixture,
 * test/cluster/storage-cluster.ts, as datavolume-vm.test.ts). Our CLI's `virtctl image-upload dv ... --image-path <the tiny
 * guest's qcow2>` through a port-forward to the upload proxy: the DataVolume passes
 * UploadReady and ends Succeeded, and its claim's `disk.img` (read by a pod) has the
 * sha256 of `qemu-img convert -O raw` of the image, grown with zeros to the asked size.
 * The proxy refuses a wrong token (401) and takes one an UploadTokenRequest (CDI's
 * example manifest) gave; CDI's upload example DataVolume reaches UploadReady.
 * No guest boots here: the content check is the claim's bytes (datavolume-vm.test.ts boots
 * from imported claims).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import { type Forward, forwardPort } from '../../src/cli/commands/virtctl/vmexport-transfer';
import { bootDiskPath } from '../support/guest';
import { waitFor } from '../support/wait';
import { csiClusterTestsEnabled } from './csi-stack';
import { storageClusterFixture } from './storage-cluster';

const enabled = csiClusterTestsEnabled('DataVolume uploads on the cluster');
const NS = 'cluster-upload';
const CDI = { group: 'cdi.kubevirt.io', version: 'v1beta1', plural: 'datavolumes' };
const VIRTCTL = resolve('dist/cli/virtctl.js');
const EXAMPLES = resolve('../shared/cdi/examples');

describe.skipIf(!enabled)('DataVolume uploads on the real cluster', () => {
  const sc = storageClusterFixture({ namespace: NS, tmpPrefix: 'kvts-upload-' });
  let fwd: Forward | undefined;

  const readDv = async (name: string) =>
    (await sc.custom.getNamespacedCustomObject({ ...CDI, namespace: NS, name }).catch(() => undefined)) as
      | DataVolume
      | undefined;
  const diagnose = () => sc.diagnose(['virt-controller', 'cdi-uploadproxy']);
  const dvPhase = (name: string, want: string, ms = 240_000) =>
    sc.waitOrDiagnose(
      `DataVolume ${name} ${want}`,
      async () => {
        const d = await readDv(name);
        if (d?.status?.phase === 'Failed')
          throw new Error(`DataVolume ${name} failed: ${JSON.stringify(d.status)}`);
        return d?.status?.phase === want ? d : undefined;
      },
      ms,
      500,
    );

  /** The built virtctl in a child process (the driver runs in this one). */
  const virtctl = (args: string[], timeoutMs = 300_000) =>
    new Promise<string>((res, rej) => {
      const child = spawn(
        process.execPath,
        [VIRTCTL, ...args, '--kubeconfig', sc.info.kubeconfigPath, '-n', NS],
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
    await sc.setUp();
    const proxyPod = await sc.waitOrDiagnose(
      'cdi-uploadproxy ready',
      async () =>
        (
          await sc.core.listNamespacedPod({
            namespace: 'kubevirt',
            labelSelector: 'kubevirt.io=cdi-uploadproxy',
          })
        ).items.find((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')),
      180_000,
      1000,
    );
    fwd = await forwardPort(sc.kc, 'kubevirt', proxyPod.metadata?.name ?? '', 8443, 0);
  }, 1_200_000);

  afterAll(async () => {
    await fwd?.close();
    await sc.tearDown();
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
    const events = (await sc.core.listNamespacedEvent({ namespace: NS })).items
      .filter((e) => e.involvedObject.name === 'up-dv' && e.involvedObject.kind === 'DataVolume')
      .map((e) => e.reason);
    expect(events).toEqual(expect.arrayContaining(['UploadScheduled', 'UploadReady', 'UploadSucceeded']));
    // The upload pod, its Service and Secret are gone.
    await waitFor(
      'upload pod gone',
      async () =>
        (await sc.core.readNamespacedPod({ name: 'cdi-upload-up-dv', namespace: NS }).catch(() => undefined))
          ? undefined
          : true,
      60_000,
      500,
    );
    expect(
      await sc.core.readNamespacedService({ name: 'cdi-upload-up-dv', namespace: NS }).catch(() => undefined),
    ).toBe(undefined);

    // The claim's disk.img, read by a pod: the raw image grown with zeros to its size.
    await sc.core.createNamespacedPod({
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
              image: sc.info.images['virt-launcher'],
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
        const p = await sc.core.readNamespacedPod({ name: 'reader', namespace: NS });
        if (p.status?.phase === 'Failed')
          throw new Error(`reader failed: ${sc.kubectl('logs', '-n', NS, 'reader')}`);
        return p.status?.phase === 'Succeeded' ? true : undefined;
      },
      120_000,
      500,
    );
    const [size, sum] = sc.kubectl('logs', '-n', NS, 'reader').trim().split(' ') as [string, string];
    const rawFile = join(sc.dir, 'boot.raw');
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
    writeFileSync(join(sc.dir, 'example-dv.yaml'), dvText);
    sc.kubectl('apply', '-n', NS, '-f', join(sc.dir, 'example-dv.yaml'));
    await dvPhase('upload-datavolume', 'UploadReady');
    const tokenReq = parse(readFileSync(join(EXAMPLES, 'upload-datavolume-token.yaml'), 'utf8'));
    tokenReq.metadata.namespace = NS;
    writeFileSync(join(sc.dir, 'example-token.json'), JSON.stringify(tokenReq));
    const answer = JSON.parse(
      sc.kubectl('create', '--validate=false', '-f', join(sc.dir, 'example-token.json'), '-o', 'json'),
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
