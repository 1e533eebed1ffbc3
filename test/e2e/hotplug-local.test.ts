/**
 * Volume hotplug in local mode (`kubevirt-ts up`), on the project's CSI driver in-process:
 * a running tiny guest gets a hotpluggable PVC volume and its disk (with a serial) through
 * an edit of its VM's spec; the attachment pod runs in the pod runtime (an idle process
 * holding the claim published in its pod directory), the in-process virt-handler mounts
 * the claim's disk.img into the launcher pod's `hotplug-disks` directory and the launcher
 * attaches it. The guest sees the serial and writes a marker; removing the volume takes
 * the disk away, and the claim's disk.img holds the marker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import type { Pod } from '../../src/controllers/common/pod';
import { localCsiProblem } from '../../src/controllers/composition/local-csi/local-csi';
import { loopDevicesOf } from '../../src/controllers/csi-driver/loop-devices';
import {
  PersistentVolumeClaimType,
  PersistentVolumeType,
  PodType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { diskImageLine } from '../support/volume-image';
import { type LocalStorageFixture, NS, startLocalStorage } from './local-storage-fixture';
import { e2eRun, waitFor } from './node-harness';

const run = e2eRun('volume hotplug in local mode', () => localCsiProblem());
const name = `hpl-${process.pid}`;
const CLAIM = `${name}-data`;
const SERIAL = 'KVTSLOCALHP1';
const SECTOR = 2048; // 1 MiB into the disk

interface Claim extends KubeObject {
  spec?: { volumeName?: string };
}
interface Volume extends KubeObject {
  spec?: { csi?: { volumeHandle?: string } };
}
type Vm = KubeObject & {
  spec: { template: { spec: { domain: { devices: { disks: unknown[] } }; volumes: unknown[] } } };
};

describe.runIf(run)('volume hotplug in local mode (CSI pool in-process)', () => {
  let f: LocalStorageFixture;
  beforeAll(async () => {
    f = await startLocalStorage('kvts-hpl-');
  }, 60_000);
  afterAll(async () => {
    await f?.node.store.delete(PersistentVolumeClaimType, CLAIM, { namespace: NS }).catch(() => undefined);
    await f?.stop([name]);
  }, 180_000);

  const editVm = async (fn: (spec: Vm['spec']['template']['spec']) => void) => {
    const vm = await f.node.store.get<Vm>(VirtualMachineType, name, NS);
    fn(vm.spec.template.spec);
    await f.node.store.update(VirtualMachineType, vm);
  };
  const hotStatus = async () =>
    (
      await f.node.store.get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, name, NS)
    ).status?.volumeStatus?.find((s) => s.name === 'hot');
  const attachmentPods = async () =>
    (await f.node.store.list<Pod & KubeObject>(PodType, { namespace: NS })).items.filter((p) =>
      p.metadata?.name?.startsWith('hp-volume-'),
    );

  it('a PVC hot-added by a VM spec edit reaches the guest with its serial, and goes again', {
    timeout: 600_000,
  }, async () => {
    await f.node.store.create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: CLAIM, namespace: NS },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'kubevirt-ts-local',
        resources: { requests: { storage: '64Mi' } },
      },
    } as KubeObject);
    await f.node.store.create(VirtualMachineType, f.dvVm(name));
    await f.succeeded(`${name}-root`);
    const marker = `KVTS-LOCAL-HOTPLUG-${Date.now()}`;
    await f.onConsole(name, async (con) => {
      const disks = () => con.run('for d in /sys/block/vd*; do echo "$(basename $d) $(cat $d/serial)"; done');
      expect(await disks()).not.toContain(SERIAL);
      const t0 = performance.now();
      await editVm((s) => {
        s.volumes.push({ name: 'hot', persistentVolumeClaim: { claimName: CLAIM, hotpluggable: true } });
        s.domain.devices.disks.push({ name: 'hot', disk: { bus: 'virtio' }, serial: SERIAL });
      });
      const line = await waitFor(
        'the hotplugged disk in the guest',
        async () => (await disks()).split('\n').find((l) => l.endsWith(` ${SERIAL}`)),
        180_000,
      ).catch(async (e) => {
        // What the hotplug path got to: the volume's status, the attachment pod, the claim.
        const pods = (await attachmentPods()).map((p) => ({ name: p.metadata?.name, status: p.status }));
        const pvc = await f.node.store
          .get<KubeObject>(PersistentVolumeClaimType, CLAIM, NS)
          .catch(() => undefined);
        throw new Error(
          `${e}\nstatus: ${JSON.stringify(await hotStatus())}\npods: ${JSON.stringify(pods)}\nclaim: ${JSON.stringify((pvc as { status?: unknown })?.status)}`,
        );
      });
      const attachMs = performance.now() - t0;
      const dev = line.split(' ')[0] ?? '';
      expect(dev).toMatch(/^vd[b-z]$/);
      const ready = await waitFor(
        'the volume Ready',
        async () => {
          const s = await hotStatus();
          return s?.phase === 'Ready' && s;
        },
        60_000,
      ).catch(async (e) => {
        throw new Error(`${e}\nstatus: ${JSON.stringify(await hotStatus())}`);
      });
      const [attach] = await attachmentPods();
      expect(ready.hotplugVolume).toEqual({
        attachPodName: attach?.metadata?.name,
        attachPodUID: attach?.metadata?.uid,
      });
      expect(attach?.status?.phase).toBe('Running');
      await con.run(
        `echo ${marker} | dd of=/dev/${dev} bs=512 seek=${SECTOR} conv=notrunc,fsync 2>/dev/null; sync`,
      );
      expect(
        (await con.run(`dd if=/dev/${dev} bs=512 skip=${SECTOR} count=1 2>/dev/null | head -n1`)).trim(),
      ).toBe(marker);

      const t1 = performance.now();
      await editVm((s) => {
        s.volumes = s.volumes.filter((v) => (v as { name: string }).name !== 'hot');
        s.domain.devices.disks = s.domain.devices.disks.filter((d) => (d as { name: string }).name !== 'hot');
      });
      await waitFor('the disk gone from the guest', async () => !(await disks()).includes(SERIAL), 120_000);
      const detachMs = performance.now() - t1;
      await waitFor(
        'the status entry and the attachment pod gone',
        async () => (await hotStatus()) === undefined && (await attachmentPods()).length === 0,
        120_000,
      );
      process.stdout.write(
        `local volume hotplug: spec edit to the disk in the guest ${attachMs.toFixed(0)} ms, removal to gone ${detachMs.toFixed(0)} ms\n`,
      );
    });

    // The data is on the claim: its pool volume (an xfs image, unstaged once the
    // attachment pod went) holds disk.img with the marker.
    const claim = await f.node.store.get<Claim>(PersistentVolumeClaimType, CLAIM, NS);
    const pv = await f.node.store.get<Volume>(PersistentVolumeType, claim.spec?.volumeName ?? '');
    const volume = f.volumeFile(pv.spec?.csi?.volumeHandle ?? '');
    await waitFor('the claim unstaged', async () => (await loopDevicesOf(volume)).length === 0, 60_000);
    expect(await diskImageLine(volume, SECTOR * 512)).toBe(marker);
  });

  it('a VM deleted with a volume still hotplugged lets the claim go', { timeout: 300_000 }, async () => {
    await editVm((s) => {
      s.volumes.push({ name: 'hot', persistentVolumeClaim: { claimName: CLAIM, hotpluggable: true } });
      s.domain.devices.disks.push({ name: 'hot', disk: { bus: 'virtio' }, serial: SERIAL });
    });
    await waitFor('the volume Ready', async () => (await hotStatus())?.phase === 'Ready', 120_000).catch(
      async (e) => {
        const vmi = await f.node.store.get<VirtualMachineInstance & KubeObject>(
          VirtualMachineInstanceType,
          name,
          NS,
        );
        const pods = (await attachmentPods()).map((p) => ({
          name: p.metadata?.name,
          status: p.status?.phase,
        }));
        throw new Error(
          `${e}\nvolumes: ${JSON.stringify(vmi.spec.volumes)}\nstatus: ${JSON.stringify(vmi.status?.volumeStatus)}\npods: ${JSON.stringify(pods)}`,
        );
      },
    );
    const claim = await f.node.store.get<Claim>(PersistentVolumeClaimType, CLAIM, NS);
    const pv = await f.node.store.get<Volume>(PersistentVolumeType, claim.spec?.volumeName ?? '');
    const volume = f.volumeFile(pv.spec?.csi?.volumeHandle ?? '');
    expect(await loopDevicesOf(volume)).toHaveLength(1);
    await f.node.store.delete(VirtualMachineType, name, { namespace: NS });
    // The handler unmounts the disk from the gone launcher pod (its uid from the VMI's
    // activePods), so the pod runtime can tear the pod down and the claim is unstaged.
    await waitFor('the claim unstaged', async () => (await loopDevicesOf(volume)).length === 0, 120_000);
    expect(await attachmentPods()).toHaveLength(0);
  });
});
