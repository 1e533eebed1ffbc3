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
 * example manifest) gave; CDI's upload example DataVolume reaches UploadReady. The block
 * case finds the proxy as upstream's virtctl does without `--uploadproxy-url`: through the
 * CDIConfig's status.uploadProxyURL, which an Ingress to cdi-uploadproxy sets and the
 * override replaces.
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
import type { CDIConfig, DataVolume } from '../../src/api/generated/cdi/types';
import { type Forward, forwardPort } from '../../src/cli/commands/virtctl/vmexport-transfer';
import { cdiExamplesDir, needsCdiExamples } from '../support/cdi-examples';
import { bootDiskPath } from '../support/guest';
import { waitFor } from '../support/wait';
import { csiClusterTestsEnabled } from './csi-stack';
import { storageClusterFixture } from './storage-cluster';

const enabled = csiClusterTestsEnabled('DataVolume uploads on the cluster');
const NS = 'cluster-upload';
const CDI = { group: 'cdi.kubevirt.io', version: 'v1beta1', plural: 'datavolumes' };
const VIRTCTL = resolve('dist/cli/virtctl.js');

describe.skipIf(!enabled)('DataVolume uploads on the real cluster', () => {
  const sc = storageClusterFixture({ namespace: NS, tmpPrefix: 'kvts-upload-' });
  const CDI_CONFIG = { group: 'cdi.kubevirt.io', version: 'v1beta1', plural: 'cdiconfigs' };
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

  /** `qemu-img convert -O raw` of the uploaded image. */
  const rawImage = () => {
    const rawFile = join(sc.dir, 'boot.raw');
    if (!existsSync(rawFile))
      execFileSync('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', bootDiskPath, rawFile]);
    return readFileSync(rawFile);
  };
  /** sha256 of `raw` followed by zeros to `size` bytes. */
  const paddedSum = (raw: Buffer, size: number) =>
    createHash('sha256')
      .update(raw)
      .update(Buffer.alloc(size - raw.length))
      .digest('hex');

  /** The size and sha256 of a claim's disk (`disk.img`, or the device), read by a pod. */
  const readClaim = async (pod: string, claimName: string, block: boolean): Promise<[string, string]> => {
    const path = block ? '/dev/disk0' : '/d/disk.img';
    // Read in 4 MiB pieces to the end: a device's stat says no size.
    const script = `const f=require('fs'),h=require('crypto').createHash('sha256'),b=Buffer.alloc(4<<20),fd=f.openSync('${path}','r');let n=0,r;while((r=f.readSync(fd,b,0,b.length,null))>0){h.update(b.subarray(0,r));n+=r}console.log(n+' '+h.digest('hex'))`;
    await sc.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: pod },
        spec: {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: 1,
          automountServiceAccountToken: false,
          securityContext: block ? { runAsUser: 0 } : { runAsUser: 107, runAsGroup: 107, fsGroup: 107 },
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName, readOnly: true } }],
          containers: [
            {
              name: 'main',
              image: sc.info.images['virt-launcher'],
              imagePullPolicy: 'Never',
              command: ['node', '-e', script],
              ...(block
                ? { volumeDevices: [{ name: 'd', devicePath: '/dev/disk0' }] }
                : { volumeMounts: [{ name: 'd', mountPath: '/d', readOnly: true }] }),
            },
          ],
        },
      },
    });
    await sc.waitOrDiagnose(
      `${pod} done`,
      async () => {
        const p = await sc.core.readNamespacedPod({ name: pod, namespace: NS });
        if (p.status?.phase === 'Failed')
          throw new Error(`${pod} failed: ${sc.kubectl('logs', '-n', NS, pod)}`);
        return p.status?.phase === 'Succeeded' ? true : undefined;
      },
      120_000,
      500,
    );
    return sc.kubectl('logs', '-n', NS, pod).trim().split(' ') as [string, string];
  };

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
    const [size, sum] = await readClaim('reader', 'up-dv', false);
    const raw = rawImage();
    // The disk is the image grown to the size asked (CDI resizes an uploaded disk), as far
    // as the filesystem's room less its overhead allows.
    expect(Number(size)).toBeGreaterThanOrEqual(raw.length);
    expect(Number(size)).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(Number(size) % 512).toBe(0);
    expect(sum).toBe(paddedSum(raw, Number(size)));
  }, 600_000);

  /** The CDIConfig `config` (virt-controller's config controller makes it) once `ok` holds. */
  const cdiConfigWhen = (what: string, ok: (c: CDIConfig) => boolean) =>
    sc.waitOrDiagnose(
      `CDIConfig config: ${what}`,
      async () => {
        const c = (await sc.custom
          .getClusterCustomObject({ ...CDI_CONFIG, name: 'config' })
          .catch(() => undefined)) as CDIConfig | undefined;
        return c && ok(c) ? c : undefined;
      },
      60_000,
      500,
    );
  const setOverride = async (url: string | null) => {
    const c = await cdiConfigWhen('made', () => true);
    await sc.custom.replaceClusterCustomObject({
      ...CDI_CONFIG,
      name: 'config',
      body: { ...c, spec: { ...c.spec, uploadProxyURLOverride: url ?? undefined } },
    });
  };

  it('virtctl image-upload pvc --volume-mode block, the proxy found through the CDIConfig: the device holds the raw image', async () => {
    // CDI's config controller: an Ingress to cdi-uploadproxy in the install's namespace
    // gives status.uploadProxyURL; the override wins over it; virtctl reads the status.
    const ingress = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'upload-test', namespace: 'kubevirt' },
      spec: {
        rules: [
          {
            host: 'upload.kubevirt-ts.test',
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'cdi-uploadproxy', port: { number: 443 } } },
                },
              ],
            },
          },
        ],
      },
    };
    await sc.objects.create(ingress as never);
    const proxyUrl = `https://127.0.0.1:${fwd!.port}`;
    try {
      await cdiConfigWhen(
        'uploadProxyURL from the Ingress',
        (c) => c.status?.uploadProxyURL === 'upload.kubevirt-ts.test',
      );
      await setOverride(proxyUrl);
      await cdiConfigWhen('uploadProxyURL from the override', (c) => c.status?.uploadProxyURL === proxyUrl);
    } finally {
      await sc.objects.delete(ingress as never).catch(() => {});
    }
    const out = await virtctl([
      'image-upload',
      'pvc',
      'up-blk',
      '--size',
      '64Mi',
      // A PVC takes the cluster's default class, which this cluster has none of (the
      // DataVolume takes the default virt class).
      '--storage-class',
      'kubevirt-ts-local',
      '--volume-mode',
      'block',
      '--image-path',
      bootDiskPath,
      '--insecure',
    ])
      .catch(async (e) => {
        throw new Error(`${e}\n${await diagnose()}`);
      })
      .finally(() => setOverride(null));
    expect(out).toContain(`PersistentVolumeClaim ${NS}/up-blk created`);
    expect(out).toContain('Processing completed successfully');
    const claim = await sc.core.readNamespacedPersistentVolumeClaim({ name: 'up-blk', namespace: NS });
    expect(claim.spec?.volumeMode).toBe('Block');
    expect(claim.spec?.storageClassName).toBe('kubevirt-ts-local');
    expect(claim.metadata?.annotations?.['cdi.kubevirt.io/storage.pod.phase']).toBe('Succeeded');
    const [size, sum] = await readClaim('reader-blk', 'up-blk', true);
    // A block claim is its asked size; the image is written raw from its start, the rest of
    // a new volume reads as zeros.
    expect(Number(size)).toBe(64 * 1024 * 1024);
    expect(sum).toBe(paddedSum(rawImage(), Number(size)));
  }, 600_000);

  it("CDI's upload example reaches UploadReady; the proxy refuses a wrong token and takes an UploadTokenRequest's", async (ctx) => {
    // The one place that knows where CDI's examples are (test/support/cdi-examples.ts).
    const EXAMPLES = cdiExamplesDir();
    if (!EXAMPLES || !existsSync(join(EXAMPLES, 'upload-datavolume.yaml')))
      return ctx.skip(`CDI's upload example is absent ${needsCdiExamples}`);
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
