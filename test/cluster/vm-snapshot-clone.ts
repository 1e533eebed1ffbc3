/**
 * The clone step of test/cluster/vm-snapshot.test.ts (issue 27, VirtualMachineClone): the
 * VM left stopped by the restore there is cloned (a snapshot, then a restore to a new VM);
 * the clone has the asked MAC and SMBIOS serial (read by its guest), its own claim
 * restored from the snapshot, boots once and overwrites its disk, while the source's disk
 * still holds what it held (read by a pod: no second guest boot). Prints
 * the clone's time for the `BENCH snapshot` line (clone_vm_ms). Kept apart so the snapshot file stays readable; it runs in
 * that file's cluster, driver and namespace.
 */
import type { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import type { SerialConsole } from '../support/guest';

/** What the snapshot test file's case hands the clone step. */
export interface SnapshotCase {
  info: ClusterInfo;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  ns: string;
  /** The source VM: stopped, its `data` volume on a restored claim holding FILE-A-PRESENT. */
  vm: string;
  readVm: (name?: string) => Promise<VirtualMachine>;
  readVmi: (name?: string) => Promise<VirtualMachineInstance | undefined>;
  setRunStrategy: (runStrategy: string, name?: string) => Promise<void>;
  booted: (name?: string) => Promise<{ con: SerialConsole; vmiUid: string; pod: string }>;
  markerCount: (pod: string, vmiUid: string) => Promise<string>;
  readDisk: (con: SerialConsole) => Promise<string>;
  writeDisk: (con: SerialConsole, text: string) => Promise<string>;
  show: <T>(what: string, f: () => Promise<T | undefined>, ms?: number) => Promise<T>;
}

/**
 * Clones `c.vm` to `<vm>-clone` and proves the clone (see the file comment); resolves with
 * the clone's time, from its creation to Succeeded (its target VM there, its claim restored).
 */
export async function cloneStoppedVm(c: SnapshotCase): Promise<number> {
  const CLONE = `${c.vm}-clone`;
  const MAC = '02:00:00:c1:0e:01';
  const SERIAL = 'kvts-clone-serial-1';
  const sourceClaim = (await c.readVm()).spec.template.spec?.volumes?.find((v) => v.name === 'data')
    ?.persistentVolumeClaim?.claimName;
  expect(sourceClaim).toMatch(/^restore-/);
  const started = Date.now();
  await c.custom.createNamespacedCustomObject({
    group: 'clone.kubevirt.io',
    version: 'v1beta1',
    namespace: c.ns,
    plural: 'virtualmachineclones',
    body: {
      apiVersion: 'clone.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClone',
      metadata: { name: 'clone1' },
      spec: {
        source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: c.vm },
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: CLONE },
        newMacAddresses: { default: MAC },
        newSMBiosSerial: SERIAL,
      },
    },
  });
  const readClone = async () =>
    (await c.custom.getNamespacedCustomObject({
      group: 'clone.kubevirt.io',
      version: 'v1beta1',
      namespace: c.ns,
      plural: 'virtualmachineclones',
      name: 'clone1',
    })) as {
      metadata: { uid: string };
      status?: { phase?: string; targetName?: string; snapshotName?: string; restoreName?: string };
    };
  const done = await c
    .show('the clone Succeeded', async () => {
      const x = await readClone();
      if (x.status?.phase === 'Failed') throw new Error(`clone failed: ${JSON.stringify(x.status)}`);
      return x.status?.phase === 'Succeeded' ? x : undefined;
    })
    .catch(async (e) => {
      throw new Error(`${e}\nclone status: ${JSON.stringify((await readClone()).status)}`);
    });
  const cloneMs = Date.now() - started;
  expect(done.status?.targetName).toBe(CLONE);
  const uid = done.metadata.uid;
  expect(done.status?.snapshotName).toBe(`tmp-snapshot-${uid}`);
  expect(done.status?.restoreName).toBe(`tmp-restore-${uid}`);
  const target = await c.readVm(CLONE);
  const t = target.spec.template.spec!;
  expect(t.domain.devices.interfaces?.find((i) => i.name === 'default')?.macAddress).toBe(MAC);
  expect(t.domain.firmware?.serial).toBe(SERIAL);
  const claim = t.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim?.claimName ?? '';
  expect(claim).not.toBe(sourceClaim);
  const pvc = await c.core.readNamespacedPersistentVolumeClaim({ name: claim, namespace: c.ns });
  expect(pvc.spec?.dataSource).toMatchObject({ kind: 'VolumeSnapshot' });
  const source = await c.readVm();
  expect(source.spec.template.spec?.domain.firmware?.serial).not.toBe(SERIAL);

  // The clone boots on its own disk: what the source held (A), written over in the clone only.
  await c.setRunStrategy('Always', CLONE);
  const run = await c.booted(CLONE);
  expect(await run.con.run('cat /sys/class/net/eth0/address')).toBe(`${MAC}\n`);
  expect(await run.con.run('cat /sys/class/dmi/id/product_serial')).toBe(`${SERIAL}\n`);
  expect(await c.readDisk(run.con)).toBe('FILE-A-PRESENT\n');
  await c.writeDisk(run.con, 'FILE-C-CLONE-1');
  expect(await c.readDisk(run.con)).toBe('FILE-C-CLONE-1\n');
  expect(await c.markerCount(run.pod, run.vmiUid)).toBe('1');
  run.con.close();
  // Its claim bound (WaitForFirstConsumer: at this first start), the temporary snapshot and restore go.
  const cleaned = await c.show('the clone cleaned up', async () => {
    const x = await readClone();
    return x.status?.snapshotName === undefined && x.status?.restoreName === undefined ? x : undefined;
  });
  expect(cleaned.status?.phase).toBe('Succeeded');
  const gone = async (plural: string, name: string) =>
    !(await c.custom
      .getNamespacedCustomObject({
        group: 'snapshot.kubevirt.io',
        version: 'v1beta1',
        namespace: c.ns,
        plural,
        name,
      })
      .catch(() => undefined));
  await c.show('the temporary restore deleted', () => gone('virtualmachinerestores', `tmp-restore-${uid}`));
  await c.show('the temporary snapshot deleted', () =>
    gone('virtualmachinesnapshots', `tmp-snapshot-${uid}`),
  );
  await c.setRunStrategy('Halted', CLONE);
  await c.show('clone VMI gone', async () => !(await c.readVmi(CLONE)));

  // The source's disk still holds A: read by a pod, not a second guest boot.
  await c.core.createNamespacedPod({
    namespace: c.ns,
    body: {
      metadata: { name: 'readsrc' },
      spec: {
        restartPolicy: 'Never',
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: sourceClaim ?? '' } }],
        containers: [
          {
            name: 'c',
            image: c.info.images['kubevirt-ts'] ?? '',
            imagePullPolicy: 'Never',
            command: ['/bin/sh', '-c', 'head -c 14 /data/disk.img'],
            securityContext: { runAsUser: 0 },
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
      },
    },
  });
  await c.show('readsrc done', async () => {
    const p = await c.core.readNamespacedPod({ name: 'readsrc', namespace: c.ns });
    if (p.status?.phase === 'Failed') throw new Error(`readsrc failed: ${JSON.stringify(p.status)}`);
    return p.status?.phase === 'Succeeded';
  });
  expect(await c.core.readNamespacedPodLog({ name: 'readsrc', namespace: c.ns })).toBe('FILE-A-PRESENT');
  return cloneMs;
}
