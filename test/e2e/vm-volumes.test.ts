/**
 * End to end on the embedded store with one real boot: a VM whose tiny guest has an
 * emptyDisk, a hostDisk (DiskOrCreate in a temp dir), configMap, secret and downwardAPI
 * disks and a PVC bound to a hostPath PV. The VMI controller renders the launcher pod's
 * volumes, the local pod runtime materializes the config volumes, the hostPath and the
 * claim, the launcher creates the qcow2, the sparse file and the ISOs, and the guest
 * boots. Checked in the running domain (virsh dumpxml: each disk's source) and through
 * the guest console: each disk's size as the guest sees it, the ISOs' volume labels and
 * values read from the raw devices (the tiny guest has no iso9660 driver), the claim's
 * image content, and a guest write landing in the host file.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/controllers/common/pod';
import { podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import type { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import {
  ConfigMapType,
  PersistentVolumeClaimType,
  PersistentVolumeType,
  SecretType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER, type SerialConsole } from '../support/guest';
import {
  type EmbeddedNode,
  e2eRun,
  LIBVIRT_URI,
  type NodeHarness,
  startEmbeddedNode,
  tinyGuestVm,
  waitFor,
} from './node-harness';

const run = e2eRun('VM volumes end to end (embedded store)');

const MiB = 1024 * 1024;
/** The serials of the VM's six disks, sorted: what the domain and the guest must both show. */
const DISK_SERIALS = ['cfgdisk', 'dapidisk', 'hostdisk', 'pvcdisk', 'scratch', 'secdisk'];

interface DomainDisk {
  dev: string;
  source: string;
  format: string;
  serial: string;
}

/** The disks of a running domain, from `virsh dumpxml`. */
function domainDisks(domain: string): DomainDisk[] {
  const xml = spawnSync('virsh', ['-c', LIBVIRT_URI, 'dumpxml', domain], { encoding: 'utf8' }).stdout ?? '';
  return [...xml.matchAll(/<disk [\s\S]*?<\/disk>/g)].map(([d]) => ({
    dev: /<target dev='([^']+)'/.exec(d)?.[1] ?? '',
    source: /<source (?:file|dev)='([^']+)'/.exec(d)?.[1] ?? '',
    format: /<driver [^>]*type='([^']+)'/.exec(d)?.[1] ?? '',
    serial: /<serial>([^<]*)<\/serial>/.exec(d)?.[1] ?? '',
  }));
}

describe.runIf(run)('VM with emptyDisk, hostDisk and configMap disks (real guest)', () => {
  const ns = 'default';
  const name = `e2e-vol-${process.pid}`;
  const domain = `${ns}_${name}`;
  const marker = `kvtscfg${process.pid}value`;
  const secretMarker = `kvtssec${process.pid}value`;
  const labelMarker = `kvtsdapi${process.pid}value`;
  let store: EmbeddedStore;
  let embedded: EmbeddedNode | undefined;
  let node: NodeHarness;
  let hostDir: string;
  let hostFile: string;
  let pvDir: string;
  let console_: SerialConsole | undefined;
  let pod: Pod;
  /** Guest block devices by serial: name and size in 512-byte sectors. */
  let guestDisks: Record<string, { dev: string; sectors: number }> = {};

  beforeAll(async () => {
    embedded = await startEmbeddedNode(`node-vol-${process.pid}`, {
      featureGates: ['HostDisk'],
      volumes: true,
    });
    ({ store, node } = embedded);
    // QEMU runs as libvirt-qemu: the host disk's directory must be reachable.
    hostDir = mkdtempSync(join(tmpdir(), 'kvts-e2e-hostdisk-'));
    chmodSync(hostDir, 0o755);
    hostFile = join(hostDir, 'images', 'data.img');
    // A hostPath PersistentVolume holding a raw disk.img, and a claim bound to it.
    pvDir = join(hostDir, 'pv');
    mkdirSync(pvDir, { mode: 0o755 });
    const image = Buffer.alloc(16 * MiB);
    image.write('kvts-pvc-disk\n', 0, 'latin1');
    writeFileSync(join(pvDir, 'disk.img'), image);
    await store.create(PersistentVolumeType, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `e2e-vol-pv-${process.pid}` },
      spec: { capacity: { storage: '16Mi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: pvDir } },
    } as KubeObject);
    const claim = await store.create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'e2e-vol-claim', namespace: 'default' },
      spec: { volumeName: `e2e-vol-pv-${process.pid}`, accessModes: ['ReadWriteOnce'] },
    } as KubeObject);
    await store.updateStatus(PersistentVolumeClaimType, {
      ...claim,
      status: { phase: 'Bound' },
    } as KubeObject);
  }, 60_000);

  afterAll(async () => {
    console_?.close();
    await embedded?.close(domain);
    if (hostDir) rmSync(hostDir, { recursive: true, force: true });
  }, 60_000);

  it('boots the guest with the six disks attached from the files the launcher made', async () => {
    await store.create(ConfigMapType, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'e2e-vol-cfg', namespace: ns },
      data: { 'marker.txt': `${marker}\n` },
    } as KubeObject);
    await store.create(SecretType, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'e2e-vol-sec', namespace: ns },
      data: { token: Buffer.from(secretMarker).toString('base64') },
    } as KubeObject);
    const vm = tinyGuestVm(name, ns);
    // VM template labels reach the VMI and its launcher pod, whose labels the downwardAPI disk carries.
    vm.spec!.template.metadata!.labels = { ...vm.spec!.template.metadata!.labels, 'kvts-dapi': labelMarker };
    const spec = vm.spec!.template.spec!;
    spec.domain.devices.disks = [
      { name: 'scratch', serial: 'scratch', disk: { bus: 'virtio' } },
      { name: 'hd', serial: 'hostdisk', disk: { bus: 'virtio' } },
      { name: 'cfg', serial: 'cfgdisk', disk: { bus: 'virtio' } },
      { name: 'pvc', serial: 'pvcdisk', disk: { bus: 'virtio' } },
      { name: 'sec', serial: 'secdisk', disk: { bus: 'virtio' } },
      { name: 'dapi', serial: 'dapidisk', disk: { bus: 'virtio' } },
    ];
    spec.volumes = [
      { name: 'scratch', emptyDisk: { capacity: '64Mi' } },
      { name: 'hd', hostDisk: { path: hostFile, type: 'DiskOrCreate', capacity: '32Mi' } },
      { name: 'cfg', configMap: { name: 'e2e-vol-cfg' } },
      { name: 'pvc', persistentVolumeClaim: { claimName: 'e2e-vol-claim' } },
      { name: 'sec', secret: { secretName: 'e2e-vol-sec', volumeLabel: 'OEMDRV' } },
      {
        name: 'dapi',
        downwardAPI: { fields: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
      },
    ];
    await store.create(VirtualMachineType, vm as KubeObject);
    const vmi = await waitFor('the VMI scheduled to the node', async () => {
      const v = await node.getVmi(ns, name);
      return v.status?.nodeName === node.o.nodeName ? v : undefined;
    });
    pod = await waitFor('the launcher pod', () => node.podOf(vmi));
    const launcherFailed = async () => {
      const p = await node.podOf(vmi).catch(() => undefined);
      const t = p?.status?.containerStatuses?.[0]?.state?.terminated;
      return t ? `launcher exited ${t.exitCode}: ${t.message ?? ''}` : (p?.status?.message ?? '');
    };
    console_ = await node.console(pod).catch(async (e) => {
      throw new Error(`${(e as Error).message}\n${await launcherFailed()}`);
    });
    await console_.waitFor(BOOT_MARKER, 180_000).catch(async (e) => {
      throw new Error(`${(e as Error).message}\n${await launcherFailed()}`);
    });

    const uid = pod.metadata?.uid ?? '';
    const disks = domainDisks(domain);
    const bySerial = Object.fromEntries(disks.map((d) => [d.serial, d]));
    expect(Object.keys(bySerial).sort()).toEqual(DISK_SERIALS);
    expect(bySerial.scratch).toMatchObject({
      source: join(podEmptyDirPath(node.podsRoot, uid, 'libvirt-runtime'), 'empty-disks', 'scratch.qcow2'),
      format: 'qcow2',
    });
    expect(bySerial.hostdisk).toMatchObject({ source: hostFile, format: 'raw' });
    expect(bySerial.secdisk.source).toBe(
      join(podEmptyDirPath(node.podsRoot, uid, 'private'), 'secret-disks', 'sec.iso'),
    );
    expect(bySerial.dapidisk.source).toBe(
      join(podEmptyDirPath(node.podsRoot, uid, 'private'), 'downwardapi-disks', 'dapi.iso'),
    );
    expect(bySerial.cfgdisk).toMatchObject({
      source: join(podEmptyDirPath(node.podsRoot, uid, 'private'), 'config-map-disks', 'cfg.iso'),
      format: 'raw',
    });
    // The claim's disk.img, reached through the claim's mount inside the private dir.
    const pvcSource = join(podEmptyDirPath(node.podsRoot, uid, 'private'), 'vmi-disks', 'pvc', 'disk.img');
    expect(bySerial.pvcdisk).toMatchObject({ source: pvcSource, format: 'raw' });
    expect(realpathSync(pvcSource)).toBe(join(pvDir, 'disk.img'));
    // The hostDisk was created sparse, with its directory, at the capacity.
    expect(statSync(hostFile).size).toBe(32 * MiB);
  }, 240_000);

  /** The ISO 9660 volume id on guest device `dev`: the primary volume descriptor's (sector 16), offset 40, 32 bytes. */
  const isoLabel = async (dev: string) =>
    (await console_!.run(`dd if=${dev} bs=1 skip=32808 count=32 2>/dev/null; echo`)).trim();
  /** The first word `<prefix><digits>value` on a raw device, read in the guest. */
  const rawWord = async (dev: string, prefix: string) =>
    (await console_!.run(`tr -c 'a-z0-9' '\\n' < ${dev} | grep -m1 '^${prefix}[0-9]*value$'`)).trim();

  it('shows the guest each disk at its size', async () => {
    const out = await console_!.run(
      'for d in /sys/block/vd*; do echo "$(cat $d/serial) $(basename $d) $(cat $d/size)"; done',
    );
    guestDisks = Object.fromEntries(
      out
        .trim()
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .filter((f) => f.length === 3)
        .map(([serial, dev, size]) => [serial, { dev, sectors: Number(size) }]),
    );
    expect(Object.keys(guestDisks).sort()).toEqual(DISK_SERIALS);
    expect(guestDisks.pvcdisk.sectors).toBe((16 * MiB) / 512);
    expect(guestDisks.scratch.sectors).toBe((64 * MiB) / 512);
    expect(guestDisks.hostdisk.sectors).toBe((32 * MiB) / 512);
    const iso = join(
      podEmptyDirPath(node.podsRoot, pod.metadata?.uid ?? '', 'private'),
      'config-map-disks',
      'cfg.iso',
    );
    expect(guestDisks.cfgdisk.sectors).toBe(statSync(iso).size / 512);
  }, 60_000);

  it('gives the guest the configMap value on an ISO labelled cfgdata', async () => {
    const dev = `/dev/${guestDisks.cfgdisk.dev}`;
    expect(await isoLabel(dev)).toBe('cfgdata');
    expect(await rawWord(dev, 'kvtscfg')).toBe(marker);
  }, 60_000);

  it('gives the guest the secret on an ISO labelled OEMDRV and the pod labels through downwardAPI', async () => {
    const sec = `/dev/${guestDisks.secdisk.dev}`;
    expect(await isoLabel(sec)).toBe('OEMDRV');
    expect(await rawWord(sec, 'kvtssec')).toBe(secretMarker);
    // The downwardAPI file holds the launcher pod's labels (`kvts-dapi="<marker>"` among them).
    expect(await rawWord(`/dev/${guestDisks.dapidisk.dev}`, 'kvtsdapi')).toBe(labelMarker);
  }, 60_000);

  it("reads the claim's disk image", async () => {
    const head = await console_!.run(`head -c 13 /dev/${guestDisks.pvcdisk.dev}; echo`);
    expect(head.trim()).toBe('kvts-pvc-disk');
  }, 60_000);

  it('writes through the hostDisk into the host file', async () => {
    const dev = `/dev/${guestDisks.hostdisk.dev}`;
    await console_!.run(`echo kvts-hostdisk-write > ${dev}; sync`);
    const head = await waitFor('the guest write in the host file', () => {
      const b = readFileSync(hostFile).subarray(0, 20).toString('latin1');
      return b.startsWith('kvts-hostdisk-write') ? b : undefined;
    });
    expect(head).toBe('kvts-hostdisk-write\n');
  }, 60_000);
});
