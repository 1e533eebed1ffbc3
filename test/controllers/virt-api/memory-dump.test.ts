/**
 * virt-api's memorydump / removememorydump (upstream pkg/virt-api/rest/memorydump.go) over
 * real HTTPS on the embedded store: the request lands in the VM's
 * `status.memoryDumpRequest` (Associating, then Dissociating on remove), after upstream's
 * checks, worded as upstream's: a claim name, the VMI running, the claim a read-write
 * Filesystem claim of at least the guest's memory + 100 MiB + 5.5 %, no request in
 * progress, no other claim associated; discovery lists both.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../src/api/generated/types';
import {
  expectedMemoryDumpBytes,
  withFilesystemOverhead,
} from '../../../src/controllers/common/memory-dump-size';
import { PersistentVolumeClaimType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { startVirtApiHarness, type VirtApiHarness, VirtualMachineType } from './virt-api-harness';
import { vmObjects } from './vm-objects';

const NS = 'ns1';
const base = `/apis/subresources.kubevirt.io/v1/namespaces/${NS}`;
let h: VirtApiHarness;
const { vm, vmi } = vmObjects(() => h, NS);

const claim = (name: string, storage: string, extra: Record<string, unknown> = {}) =>
  h.store.create(PersistentVolumeClaimType, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: NS },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, ...extra },
  } as KubeObject);

beforeAll(async () => {
  h = await startVirtApiHarness();
  await vm('vm1', 'Always', { created: true });
  await vmi('vm1', { phase: 'Running' });
  await vm('off', 'Halted', {});
  await vmi('off', { phase: 'Scheduled' });
  // The template's guest has 64Mi: 164 MiB * 1.055 = 173.02 MiB, rounded up to 174Mi.
  await claim('dump', '174Mi');
  await claim('small', '173Mi');
  await claim('blk', '1Gi', { volumeMode: 'Block' });
  await claim('ro', '1Gi', { accessModes: ['ReadOnlyMany'] });
  await claim('other', '1Gi');
});

afterAll(async () => {
  await h?.close();
});

const readVm = async (name: string) => (await h.store.get(VirtualMachineType, name, NS)) as VirtualMachine;
const dump = (vmName: string, body: unknown) =>
  h.call('PUT', `${base}/virtualmachines/${vmName}/memorydump`, body);
const remove = (vmName: string) => h.call('PUT', `${base}/virtualmachines/${vmName}/removememorydump`, {});

describe('memorydump / removememorydump', () => {
  it("sizes the claim as upstream's CalcExpectedMemoryDumpSize with CDI's default overhead", () => {
    const bytes = expectedMemoryDumpBytes({
      spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
    } as never);
    expect(bytes).toBe(164n * 1024n * 1024n);
    expect(withFilesystemOverhead(bytes, '0.055')).toBe(174n * 1024n * 1024n);
  });

  it('refuses what upstream refuses, with its words', async () => {
    const none = await dump('vm1', {});
    expect(none.code).toBe(400);
    expect(none.body.message).toBe('Memory dump requires claim name to be set');
    const stopped = await dump('off', { claimName: 'dump' });
    expect(stopped.code).toBe(409);
    expect(stopped.body.message).toBe(
      'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "off": VMI is not running',
    );
    const missing = await dump('vm1', { claimName: 'nope' });
    expect(missing.code).toBe(404);
    expect(missing.body.message).toBe('persistentvolumeclaim "nope" not found');
    expect((await dump('vm1', { claimName: 'blk' })).body.message).toBe(
      'Operation cannot be fulfilled on persistentvolumeclaim "blk": pvc should be filesystem pvc',
    );
    expect((await dump('vm1', { claimName: 'ro' })).body.message).toBe(
      'Operation cannot be fulfilled on persistentvolumeclaim "ro": pvc access mode can\'t be read only',
    );
    const small = await dump('vm1', { claimName: 'small' });
    expect(small.code).toBe(409);
    expect(small.body.message).toBe(
      'Operation cannot be fulfilled on persistentvolumeclaim "small": pvc size [181404k] should be bigger then [174Mi]',
    );
    const bad = await dump('vm1', { claimName: '../x' });
    expect(bad.code).toBe(400);
    expect(bad.body.message).toContain('is not a DNS-1123 label');
    expect((await readVm('vm1')).status?.memoryDumpRequest).toBeUndefined();
    expect((await remove('vm1')).body.message).toBe(
      'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm1": can\'t remove memory dump association for vm vm1, no association found',
    );
  });

  it('puts an Associating request in the VM status, 202; a second is refused while in progress', async () => {
    const r = await dump('vm1', { claimName: 'dump' });
    expect(r.code, JSON.stringify(r.body)).toBe(202);
    expect((await readVm('vm1')).status?.memoryDumpRequest).toEqual({
      claimName: 'dump',
      phase: 'Associating',
    });
    expect((await dump('vm1', { claimName: 'dump' })).body.message).toBe(
      'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm1": memory dump request for pvc [dump] already in progress',
    );
    expect((await dump('vm1', { claimName: 'other' })).body.message).toBe(
      'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm1": can\'t request memory dump for pvc [other] while pvc [dump] is still associated as the memory dump pvc',
    );
  });

  it('dumps again into the associated claim once Completed (no claim name needed)', async () => {
    await h.store.patch(
      VirtualMachineType,
      'vm1',
      { status: { memoryDumpRequest: { claimName: 'dump', phase: 'Completed', fileName: 'f.memory.dump' } } },
      { namespace: NS, type: 'merge', subresource: 'status' },
    );
    const r = await dump('vm1', {});
    expect(r.code, JSON.stringify(r.body)).toBe(202);
    expect((await readVm('vm1')).status?.memoryDumpRequest).toEqual({
      claimName: 'dump',
      phase: 'Associating',
    });
  });

  it('remove marks the request Dissociating; a second remove is refused, and so is a dump meanwhile', async () => {
    const r = await remove('vm1');
    expect(r.code, JSON.stringify(r.body)).toBe(202);
    expect((await readVm('vm1')).status?.memoryDumpRequest).toEqual({
      claimName: 'dump',
      phase: 'Dissociating',
      remove: true,
    });
    expect((await remove('vm1')).body.message).toContain(
      'memory dump remove request for pvc [dump] already exists',
    );
    expect((await dump('vm1', {})).body.message).toContain(
      "can't dump memory for pvc [dump] a remove memory dump request is in progress",
    );
  });

  it('is listed in discovery', async () => {
    const list = await h.call('GET', '/apis/subresources.kubevirt.io/v1');
    const names = (list.body.resources as { name: string }[]).map((r) => r.name);
    expect(names).toEqual(
      expect.arrayContaining(['virtualmachines/memorydump', 'virtualmachines/removememorydump']),
    );
  });
});
