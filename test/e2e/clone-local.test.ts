/**
 * Clones in local mode (`kubevirt-ts up`), on the project's CSI driver in-process: a
 * DataVolume with a `source.pvc` is a CSI clone (the claim's dataSource becomes
 * CreateVolume's content source, a reflink copy in the pool), byte-identical to its source;
 * a VirtualMachineClone of a stopped VM (a snapshot and a restore on local mode's
 * snapshotter) gives a new VM with its own copy of the disk, which boots with what the
 * source's guest wrote and the new SMBIOS serial. Everything is gone from the pool after.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import { statePaths } from '../../src/cli/local/state-dir';
import { localCsiProblem } from '../../src/controllers/composition/local-csi/local-csi';
import { loopDevicesOf } from '../../src/controllers/csi-driver/loop-devices';
import { mountAt } from '../../src/controllers/csi-driver/mounts';
import {
  DataVolumeType,
  PersistentVolumeClaimType,
  PersistentVolumeType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import { VirtualMachineCloneType } from '../../src/controllers/runtime/storage-resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import type { SerialConsole } from '../support/guest';
import { type LocalStorageFixture, NS, startLocalStorage } from './local-storage-fixture';
import { e2eRun, waitFor } from './node-harness';

const run = e2eRun('clones in local mode', () => localCsiProblem());
const name = `cl-${process.pid}`;

interface Claim extends KubeObject {
  spec?: { volumeName?: string; dataSource?: { kind?: string; name?: string } };
}
interface Volume extends KubeObject {
  spec?: { csi?: { volumeHandle?: string } };
}

describe.runIf(run)('clones in local mode (CSI pool in-process)', () => {
  let f: LocalStorageFixture;
  beforeAll(async () => {
    f = await startLocalStorage('kvts-cll-');
  }, 60_000);
  afterAll(async () => {
    await f?.stop([`${name}-vm`, `${name}-vm-clone`]);
  }, 180_000);

  /** The sha256 of the pool volume behind a claim. */
  const claimDigest = async (claim: string) => {
    const c = await f.node.store.get<Claim>(PersistentVolumeClaimType, claim, NS);
    const pv = await f.node.store.get<Volume>(PersistentVolumeType, c.spec?.volumeName ?? '');
    return createHash('sha256')
      .update(readFileSync(f.volumeFile(pv.spec?.csi?.volumeHandle ?? '')))
      .digest('hex');
  };

  it('a source.pvc DataVolume is a CSI clone: Succeeded, byte-identical to its source', {
    timeout: 400_000,
  }, async () => {
    const dv = (dvName: string, source: Record<string, unknown>) =>
      ({
        apiVersion: 'cdi.kubevirt.io/v1beta1',
        kind: 'DataVolume',
        metadata: { name: dvName, namespace: NS },
        spec: { source, storage: { resources: { requests: { storage: '64Mi' } } } },
      }) as KubeObject;
    try {
      await f.node.store.create(DataVolumeType, dv(`${name}-src`, { http: { url: `${f.url}/boot.qcow2` } }));
      await f.succeeded(`${name}-src`);
      // The importer's volume is unstaged after its pod ends: until then its ext4 image may
      // still change (the unmount's superblock write), and a copy taken before would differ
      // from the source's final bytes without being wrong. The filesystem lives until its
      // last mount goes (the pod's mount namespace may hold one after the staging unmount),
      // and with it the loop device over the disk: both must be gone.
      const srcPv = await f.node.store.get<Volume>(
        PersistentVolumeType,
        (await f.node.store.get<Claim>(PersistentVolumeClaimType, `${name}-src`, NS)).spec?.volumeName ?? '',
      );
      const srcDisk = f.volumeFile(srcPv.spec?.csi?.volumeHandle ?? '');
      await waitFor(
        'the source volume unstaged, no loop device over its disk',
        async () =>
          (await mountAt(
            join(statePaths(f.state).csi, 'staging', srcPv.metadata?.name ?? '', 'globalmount'),
          )) === undefined && (await loopDevicesOf(srcDisk)).length === 0,
        60_000,
      );
      const started = Date.now();
      await f.node.store.create(
        DataVolumeType,
        dv(`${name}-copy`, { pvc: { namespace: NS, name: `${name}-src` } }),
      );
      const copy = await f.succeeded(`${name}-copy`);
      const ms = Date.now() - started;
      expect((copy as DataVolume).status?.progress).toBe('100.0%');
      const claim = await f.node.store.get<Claim>(PersistentVolumeClaimType, `${name}-copy`, NS);
      expect(claim.spec?.dataSource).toMatchObject({ kind: 'PersistentVolumeClaim', name: `${name}-src` });
      expect(f.poolVolumes()).toHaveLength(2);
      expect(await claimDigest(`${name}-copy`)).toBe(await claimDigest(`${name}-src`));
      process.stdout.write(`local clone DataVolume: created to Succeeded in ${ms} ms\n`);
    } finally {
      // Gone even when a check failed, so the next case starts from an empty pool.
      for (const d of [`${name}-copy`, `${name}-src`])
        await f.node.store.delete(DataVolumeType, d, { namespace: NS }).catch(() => undefined);
    }
    await f.nothingLeft();
  });

  it('a VirtualMachineClone of a stopped VM boots with the source disk and a new SMBIOS serial', {
    timeout: 600_000,
  }, async () => {
    const vm = `${name}-vm`;
    const target = `${vm}-clone`;
    const serial = 'kvts-clone-serial-1';
    const sector = 81920; // 40 MiB into the disk: past the 14 MiB boot image
    const read = (con: SerialConsole) =>
      con.run(`dd if=/dev/vda bs=512 skip=${sector} count=1 2>/dev/null | head -n1`);
    await f.node.store.create(VirtualMachineType, f.dvVm(vm));
    await f.succeeded(`${vm}-root`);
    await f.onConsole(vm, (con) =>
      con.run(`echo MARK-SRC | dd of=/dev/vda bs=512 seek=${sector} conv=notrunc 2>/dev/null; sync`),
    );
    await f.setRunning(vm, false);

    await f.node.store.create(VirtualMachineCloneType, {
      apiVersion: 'clone.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClone',
      metadata: { name: `${name}-clone`, namespace: NS },
      spec: {
        source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: vm },
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: target },
        newSMBiosSerial: serial,
      },
    } as KubeObject);
    await waitFor(
      'the VirtualMachineClone Succeeded',
      async () => {
        const c = await f.node.store.get<KubeObject & { status?: { phase?: string } }>(
          VirtualMachineCloneType,
          `${name}-clone`,
          NS,
        );
        if (c.status?.phase === 'Failed') throw new Error(`clone failed: ${JSON.stringify(c.status)}`);
        return c.status?.phase === 'Succeeded';
      },
      180_000,
    );
    type Vm = KubeObject & {
      spec: {
        template: {
          spec: {
            domain: { firmware?: { serial?: string } };
            volumes: { dataVolume?: { name: string }; persistentVolumeClaim?: { claimName: string } }[];
          };
        };
      };
    };
    const made = await f.node.store.get<Vm>(VirtualMachineType, target, NS);
    expect(made.spec.template.spec.domain.firmware?.serial).toBe(serial);
    const vol = made.spec.template.spec.volumes[0];
    const claim = vol.dataVolume?.name ?? vol.persistentVolumeClaim?.claimName;
    // The restore's own DataVolume (upstream's RandomizeNames), not the source's.
    expect(claim).toMatch(/^restore-[0-9a-f-]{36}-root$/);

    await f.setRunning(target, true);
    expect(await f.onConsole(target, read)).toContain('MARK-SRC');
    await f.node.store.delete(VirtualMachineCloneType, `${name}-clone`, { namespace: NS });
    for (const v of [target, vm]) await f.node.store.delete(VirtualMachineType, v, { namespace: NS });
    await f.nothingLeft();
  });
});
