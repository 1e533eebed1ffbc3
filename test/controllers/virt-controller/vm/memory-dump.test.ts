/**
 * The VM controller's memory dump steps (upstream pkg/storage/memorydump UpdateRequest and
 * HandleRequest): the phases of `status.memoryDumpRequest` from the VM and its VMI, and the
 * writes that carry them out on an embedded store (the memory dump volume added to the
 * VMI and the template, taken out of the VMI when the dump is done, the claim annotated
 * with the file name, the template cleaned on remove), and a VM start after a completed
 * dump getting no memory dump volume.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import { defaultVirtualMachineInstanceSpec } from '../../../../src/api/defaults/vmi-defaults';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import { validateVirtualMachine } from '../../../../src/api/validation/vm';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import {
  NamespaceType,
  PersistentVolumeClaimType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import type { Claim } from '../../../../src/controllers/virt-controller/services/volumes';
import { withoutHotplugVolumes } from '../../../../src/controllers/virt-controller/vm/hotplug-volumes';
import {
  handleMemoryDumpRequest,
  nextMemoryDumpRequest,
  PVC_MEMORY_DUMP_ANNOTATION,
  vmiSpecForStart,
} from '../../../../src/controllers/virt-controller/vm/memory-dump';

const NS = 'ns1';
const root = { name: 'root', containerDisk: { image: 'x/y:1' } };
const dumpVol = { name: 'dump', memoryDump: { claimName: 'dump', hotpluggable: true } };

const vmOf = (request: object | undefined, volumes: object[] = [root]): VirtualMachine =>
  ({
    metadata: { name: 'vm1', namespace: NS },
    spec: { template: { spec: { domain: { devices: {} }, volumes } } },
    status: request ? { memoryDumpRequest: request } : {},
  }) as unknown as VirtualMachine;
const vmiOf = (volumes: object[], volumeStatus: object[] = [], phase = 'Running'): VirtualMachineInstance =>
  ({
    metadata: { name: 'vm1', namespace: NS },
    spec: { domain: { devices: {} }, volumes },
    status: { phase, volumeStatus },
  }) as unknown as VirtualMachineInstance;

describe('nextMemoryDumpRequest (upstream UpdateRequest)', () => {
  const req = (phase: string, more: object = {}) => ({ claimName: 'dump', phase, ...more });

  it('Associating goes InProgress once the template has the volume', () => {
    expect(nextMemoryDumpRequest(vmOf(req('Associating')), vmiOf([root]))?.phase).toBe('Associating');
    expect(nextMemoryDumpRequest(vmOf(req('Associating'), [root, dumpVol]), vmiOf([root]))?.phase).toBe(
      'InProgress',
    );
  });

  it('InProgress takes the start time, then Unmounting with the file name, or Failed with the message', () => {
    const info = { claimName: 'dump', targetFileName: 'vm1-dump-20261204-212000.memory.dump' };
    const running = vmiOf(
      [root, dumpVol],
      [{ name: 'dump', phase: 'MemoryDumpInProgress', memoryDumpVolume: { ...info, startTimestamp: 'T0' } }],
    );
    expect(nextMemoryDumpRequest(vmOf(req('InProgress')), running)).toEqual(
      req('InProgress', { startTimestamp: 'T0' }),
    );
    const done = vmiOf(
      [root, dumpVol],
      [
        {
          name: 'dump',
          phase: 'MemoryDumpCompleted',
          memoryDumpVolume: { ...info, startTimestamp: 'T0', endTimestamp: 'T1' },
        },
      ],
    );
    expect(nextMemoryDumpRequest(vmOf(req('InProgress')), done)).toEqual(
      req('Unmounting', { startTimestamp: 'T0', endTimestamp: 'T1', fileName: info.targetFileName }),
    );
    const failed = vmiOf(
      [root, dumpVol],
      [
        {
          name: 'dump',
          phase: 'MemoryDumpFailed',
          message: 'Memory dump to pvc dump failed: no space',
          memoryDumpVolume: { ...info, startTimestamp: 'T0', endTimestamp: 'T1' },
        },
      ],
    );
    expect(nextMemoryDumpRequest(vmOf(req('InProgress')), failed)).toEqual(
      req('Failed', {
        startTimestamp: 'T0',
        endTimestamp: 'T1',
        message: 'Memory dump to pvc dump failed: no space',
      }),
    );
  });

  it('Unmounting is Completed once the volume status is gone; Completed stays', () => {
    const mounted = vmiOf([root], [{ name: 'dump', phase: 'Detaching' }]);
    expect(nextMemoryDumpRequest(vmOf(req('Unmounting')), mounted)?.phase).toBe('Unmounting');
    expect(nextMemoryDumpRequest(vmOf(req('Unmounting')), vmiOf([root]))?.phase).toBe('Completed');
    expect(nextMemoryDumpRequest(vmOf(req('Completed')), vmiOf([root]))).toEqual(req('Completed'));
  });

  it('remove dissociates: the request goes once neither the VMI nor the template has the volume', () => {
    const rm = req('Dissociating', { remove: true });
    expect(nextMemoryDumpRequest(vmOf(rm, [root, dumpVol]), vmiOf([root]))?.phase).toBe('Dissociating');
    expect(
      nextMemoryDumpRequest(vmOf(rm), vmiOf([root], [{ name: 'dump', phase: 'Detaching' }]))?.phase,
    ).toBe('Dissociating');
    expect(nextMemoryDumpRequest(vmOf(rm), vmiOf([root]))).toBeUndefined();
    // A remove flag turns any phase into Dissociating.
    expect(nextMemoryDumpRequest(vmOf(req('InProgress', { remove: true })), undefined)?.phase).toBe(
      'Dissociating',
    );
  });

  it('the template the controller writes validates, and defaulting gives the memory dump volume no disk', () => {
    const vm = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'vm1', namespace: NS },
      spec: {
        runStrategy: 'Always',
        template: {
          spec: {
            domain: { devices: {}, resources: { requests: { memory: '64Mi' } } },
            volumes: [root, dumpVol],
          },
        },
      },
    } as unknown as VirtualMachine;
    const config = createClusterConfig({}, { hostArchitecture: 'amd64' });
    expect(validateVirtualMachine(vm, config)).toEqual([]);
    const spec = defaultVirtualMachineInstanceSpec(vm.spec.template?.spec as never, config);
    expect(spec.domain.devices.disks?.map((d) => d.name)).toEqual(['root']);
  });

  it('a VM started after a completed dump gets no memory dump volume; RestartRequired ignores it', () => {
    const spec = vmiOf([root, dumpVol]).spec;
    expect(vmiSpecForStart(vmOf(req('Completed'), [root, dumpVol]), spec).volumes).toEqual([root]);
    expect(vmiSpecForStart(vmOf(req('InProgress'), [root, dumpVol]), spec).volumes).toEqual([root, dumpVol]);
    expect(withoutHotplugVolumes(spec).volumes).toEqual([root]);
  });
});

describe('handleMemoryDumpRequest (upstream HandleRequest) on an embedded store', () => {
  let store: EmbeddedStore;
  let claimObj: Claim | undefined;
  const deps = () => ({ client: store, claims: { get: () => claimObj, list: () => [] } as never });

  const readVm = async () => (await store.get(VirtualMachineType, 'vm1', NS)) as VirtualMachine;
  const readVmi = async () => (await store.get(VmiResource, 'vm1', NS)) as VirtualMachineInstance;
  const setRequest = async (request: object | null) =>
    (await store.patch(
      VirtualMachineType,
      'vm1',
      { status: { memoryDumpRequest: request } },
      { namespace: NS, type: 'merge', subresource: 'status' },
    )) as VirtualMachine;
  const setVmiPhase = async (phase: string) =>
    store.patch(VmiResource, 'vm1', { status: { phase } }, { namespace: NS, type: 'merge' });

  beforeAll(async () => {
    store = await EmbeddedStore.open();
    await store.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'vm1', namespace: NS },
      spec: { runStrategy: 'Always', template: { spec: { domain: { devices: {} }, volumes: [root] } } },
    } as KubeObject);
    await store.create(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'vm1', namespace: NS },
      spec: { domain: { devices: {} }, volumes: [root] },
    } as KubeObject);
    claimObj = (await store.create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'dump', namespace: NS },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject)) as Claim;
  });
  afterAll(async () => {
    await store?.close?.();
  });

  it('Associating with the VMI not running changes nothing', async () => {
    const vm = await setRequest({ claimName: 'dump', phase: 'Associating' });
    await setVmiPhase('Scheduled');
    expect(await handleMemoryDumpRequest(deps(), vm, await readVmi())).toBe(false);
    expect((await readVmi()).spec.volumes).toEqual([root]);
  });

  it('Associating adds the memory dump volume to the running VMI and to the template', async () => {
    await setVmiPhase('Running');
    const changed = await handleMemoryDumpRequest(deps(), await readVm(), await readVmi());
    expect(changed).toBe(true);
    expect((await readVmi()).spec.volumes).toEqual([root, dumpVol]);
    expect((await readVm()).spec.template?.spec?.volumes).toEqual([root, dumpVol]);
    // Again: nothing more to write.
    expect(await handleMemoryDumpRequest(deps(), await readVm(), await readVmi())).toBe(false);
  });

  it('Unmounting annotates the claim with the file name and takes the volume out of the VMI only', async () => {
    const vm = await setRequest({
      claimName: 'dump',
      phase: 'Unmounting',
      fileName: 'vm1-dump-1.memory.dump',
    });
    expect(await handleMemoryDumpRequest(deps(), vm, await readVmi())).toBe(false);
    expect((await readVmi()).spec.volumes).toEqual([root]);
    expect((await readVm()).spec.template?.spec?.volumes).toEqual([root, dumpVol]);
    const pvc = (await store.get(PersistentVolumeClaimType, 'dump', NS)) as Claim;
    expect(pvc.metadata?.annotations?.[PVC_MEMORY_DUMP_ANNOTATION]).toBe('vm1-dump-1.memory.dump');
    // upstream's annotation name.
    expect(PVC_MEMORY_DUMP_ANNOTATION).toBe('kubevirt.io/memory-dump');
  });

  it('Failed annotates the claim "Memory dump failed" (replacing the old value)', async () => {
    claimObj = (await store.get(PersistentVolumeClaimType, 'dump', NS)) as Claim;
    const vm = await setRequest({ claimName: 'dump', phase: 'Failed', message: 'x' });
    await handleMemoryDumpRequest(deps(), vm, await readVmi());
    const pvc = (await store.get(PersistentVolumeClaimType, 'dump', NS)) as Claim;
    expect(pvc.metadata?.annotations?.[PVC_MEMORY_DUMP_ANNOTATION]).toBe('Memory dump failed');
  });

  it('Dissociating takes the volume out of the template', async () => {
    const vm = await setRequest({ claimName: 'dump', phase: 'Dissociating', remove: true });
    expect(await handleMemoryDumpRequest(deps(), vm, await readVmi())).toBe(true);
    expect((await readVm()).spec.template?.spec?.volumes).toEqual([root]);
    expect(nextMemoryDumpRequest(await readVm(), await readVmi())).toBeUndefined();
  });
});
