/**
 * `virtctl image-upload` in local mode, end to end: local mode (LocalNode, what `up`
 * runs) with its CSI pool and a pod network on a test bridge serves CDI's upload proxy on
 * loopback and names it in the CDIConfig's `status.uploadProxyURL`; the built virtctl
 * (`dist/cli/virtctl.js image-upload dv NAME --size 64Mi --image-path boot.qcow2`, no
 * `--uploadproxy-url`, no `--insecure`: it trusts local mode's CA) makes the upload
 * DataVolume, waits for the upload pod (a local process in its own network namespace,
 * its serving certificate from local mode's CA), takes a token from the local API and
 * sends the tiny guest's qcow2 through the proxy, which relays into the pod's namespace.
 * The DataVolume Succeeds, the upload pod, Service and Secret go, and the pool volume's
 * disk.img (read out of its ext4 with debugfs) is `qemu-img convert -O raw` of the image,
 * zero-padded to the size the upload server gave it. Then a VM boots from it. And a
 * Block-mode upload: the pool file (the device) starts with the raw image, zeros after.
 * And `image-upload pvc` naming no class: the claim gets local mode's default class, as
 * the PV controller assigns it on a cluster, and its volume holds the image.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CDIConfig, DataVolume } from '../../src/api/generated/cdi/types';
import type { LocalNode } from '../../src/cli/local/local-node';
import { LOCAL_CLASS } from '../../src/controllers/common/csi-objects';
import { localCsiProblem } from '../../src/controllers/composition/local-csi/local-csi';
import {
  CDIConfigType,
  DataVolumeType,
  PersistentVolumeClaimType,
  PersistentVolumeType,
  PodType,
  SecretType,
  ServiceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { bootDiskPath } from '../support/guest';
import { canTestNetworking } from '../support/net-snapshot';
import { type LocalStorageFixture, NS, startLocalStorage } from './local-storage-fixture';
import { e2eRun, waitFor } from './node-harness';
import { virtctl } from './virtctl-run';

const run = e2eRun(
  'image-upload in local mode',
  () => localCsiProblem() ?? (canTestNetworking() ? undefined : 'no pod network can be made here'),
);
const name = `upl-${process.pid}`;
const vmName = `${name}-vm`;
const bridge = `kvup${process.pid % 100_000}`;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** `qemu-img convert -O raw` of the tiny guest's image, into `dir`. */
function rawOf(dir: string): Buffer {
  const rawFile = join(dir, 'boot.raw');
  execFileSync('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', bootDiskPath, rawFile]);
  return readFileSync(rawFile);
}

/** The pool volume behind claim `claimName`. */
async function volumeOf(f: LocalStorageFixture, claimName: string): Promise<string> {
  const claim = await f.node.store.get<KubeObject & { spec?: { volumeName?: string } }>(
    PersistentVolumeClaimType,
    claimName,
    NS,
  );
  const pv = await f.node.store.get<KubeObject & { spec?: { csi?: { volumeHandle?: string } } }>(
    PersistentVolumeType,
    claim.spec?.volumeName ?? '',
  );
  return f.volumeFile(pv.spec?.csi?.volumeHandle ?? '');
}

describe.runIf(run)('virtctl image-upload in local mode (CSI pool, pod network)', () => {
  let f: LocalStorageFixture;
  let node: LocalNode;
  let work: string;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'kvts-upl-img-'));
    f = await startLocalStorage('kvts-upl-', { podNetwork: { subnet: '10.244.97.0/24', bridge } });
    node = f.node;
  }, 60_000);

  /** `virtctl image-upload dv|pvc NAME --size 64Mi` of the tiny guest through local mode; it must exit 0. */
  async function upload(kind: 'dv' | 'pvc', target: string, extra: string[] = []) {
    const res = await virtctl([
      'image-upload',
      kind,
      target,
      '--size',
      '64Mi',
      ...extra,
      '--image-path',
      bootDiskPath,
      '--state-dir',
      f.state,
      '-n',
      NS,
    ]);
    process.stdout.write(res.out);
    expect(res.code).toBe(0);
    return res;
  }

  afterAll(async () => {
    // A failed run's DataVolume goes too, so its upload pod and volume do before the stop.
    for (const dv of [name, `${name}-b`])
      await f?.node.store.delete(DataVolumeType, dv, { namespace: NS }).catch(() => undefined);
    await f?.node.store
      .delete(PersistentVolumeClaimType, `${name}-p`, { namespace: NS })
      .catch(() => undefined);
    await f?.stop([vmName]);
    rmSync(work, { recursive: true, force: true });
  }, 180_000);

  it('uploads the tiny guest through the loopback proxy into a DataVolume; the volume holds it; a VM boots from it', {
    timeout: 900_000,
  }, async () => {
    const url = node.upload?.url ?? '';
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    await waitFor(
      "the CDIConfig's status.uploadProxyURL",
      async () =>
        (await node.store.get<CDIConfig & KubeObject>(CDIConfigType, 'config').catch(() => undefined))?.status
          ?.uploadProxyURL === url,
      30_000,
    );

    const res = await upload('dv', name);
    const lines = res.out.split('\n');
    expect(lines).toContain(`DataVolume ${NS}/${name} created`);
    expect(lines).toContain(`Uploading data to ${url}`);
    expect(lines).toContain('Processing completed successfully');
    expect(lines).toContain(`Uploading ${bootDiskPath} completed successfully`);

    const dv = await f.succeeded(name);
    expect(dv.status?.phase).toBe('Succeeded');
    // The upload's pod, Service and certificate Secret are gone once it is done.
    await waitFor(
      'the upload pod, Service and Secret gone',
      async () => {
        const gone = async (type: typeof PodType) =>
          (await node.store.get(type, `cdi-upload-${name}`, NS).catch(() => undefined)) === undefined;
        return (await gone(PodType)) && (await gone(ServiceType)) && (await gone(SecretType));
      },
      120_000,
    );

    // The pool volume's disk.img is the image converted to raw (zero-padded to its size).
    const dumped = join(work, 'disk.img');
    execFileSync('debugfs', ['-R', `dump /disk.img ${dumped}`, await volumeOf(f, name)]);
    const raw = rawOf(work);
    const disk = readFileSync(dumped);
    expect(raw.length).toBe(32 << 20);
    expect(disk.length).toBeGreaterThanOrEqual(raw.length);
    expect(disk.length).toBeLessThanOrEqual(64 << 20);
    expect(sha(disk.subarray(0, raw.length))).toBe(sha(raw));
    expect(disk.subarray(raw.length).every((b) => b === 0)).toBe(true);
    process.stdout.write(
      `uploaded ${statSync(bootDiskPath).size} bytes of qcow2; disk.img ${disk.length} bytes, first ${raw.length} sha256 ${sha(raw)} = qemu-img convert -O raw\n`,
    );

    // A VM on the uploaded DataVolume boots (its root shell answers).
    await node.store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: vmName, namespace: NS },
      spec: {
        runStrategy: 'Always',
        template: {
          spec: {
            terminationGracePeriodSeconds: 0,
            domain: {
              devices: {
                autoattachGraphicsDevice: false,
                autoattachPodInterface: false,
                disks: [{ name: 'root', disk: { bus: 'virtio' } }],
              },
              resources: { requests: { memory: '128Mi' } },
            },
            volumes: [{ name: 'root', dataVolume: { name } }],
          },
        },
      },
    } as KubeObject);
    expect(await f.onConsole(vmName, (con) => con.run('echo up-$((6*7))'))).toContain('up-42');

    await node.store.delete(VirtualMachineType, vmName, { namespace: NS });
    await node.store.delete(DataVolumeType, name, { namespace: NS });
    await f.nothingLeft();
    expect((await node.store.list<DataVolume & KubeObject>(DataVolumeType, { namespace: NS })).items).toEqual(
      [],
    );
  });

  it('a Block-mode upload (--volume-mode block) writes the image onto the device', {
    timeout: 600_000,
  }, async () => {
    const blockName = `${name}-b`;
    const res = await upload('dv', blockName, ['--volume-mode', 'block']);
    expect(res.out.split('\n')).toContain('Processing completed successfully');
    await f.succeeded(blockName);
    const claim = await node.store.get<KubeObject & { spec?: { volumeMode?: string } }>(
      PersistentVolumeClaimType,
      blockName,
      NS,
    );
    expect(claim.spec?.volumeMode).toBe('Block');
    // The pool file is the device: the raw image at its start, zeros after.
    const raw = rawOf(work);
    const device = readFileSync(await volumeOf(f, blockName));
    expect(device.length).toBe(64 << 20);
    expect(sha(device.subarray(0, raw.length))).toBe(sha(raw));
    expect(device.subarray(raw.length).every((b) => b === 0)).toBe(true);
    await node.store.delete(DataVolumeType, blockName, { namespace: NS });
    await f.nothingLeft();
  });

  it('an upload to a claim that names no class (`image-upload pvc`) gets the default class and holds the image', {
    timeout: 600_000,
  }, async () => {
    const claimName = `${name}-p`;
    const res = await upload('pvc', claimName);
    expect(res.out.split('\n')).toContain('Processing completed successfully');
    const claim = await node.store.get<KubeObject & { spec?: { storageClassName?: string } }>(
      PersistentVolumeClaimType,
      claimName,
      NS,
    );
    expect(claim.spec?.storageClassName).toBe(LOCAL_CLASS);
    const dumped = join(work, 'pvc-disk.img');
    execFileSync('debugfs', ['-R', `dump /disk.img ${dumped}`, await volumeOf(f, claimName)]);
    const raw = rawOf(work);
    const disk = readFileSync(dumped);
    expect(sha(disk.subarray(0, raw.length))).toBe(sha(raw));
    await node.store.delete(PersistentVolumeClaimType, claimName, { namespace: NS });
    await f.nothingLeft();
  });
});
