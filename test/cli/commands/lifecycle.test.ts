/** start/stop/restart patch the VM as upstream's subresource handlers do (checked on the embedded store). */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Target } from '../../../src/cli/commands/virtctl/target';
import { applyObjects, loadAndAdmit } from '../../../src/cli/local/apply';
import { ImageStore } from '../../../src/cli/local/images';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { restartVm, startVm, stopVm } from '../../../src/controllers/virt-api/vm-lifecycle';

const manifest = (runStrategy: string) => `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: t1, namespace: default}
spec:
  runStrategy: ${runStrategy}
  template:
    spec:
      domain:
        devices: {}
        resources: {requests: {memory: 64Mi}}
`;

async function setup(runStrategy: string) {
  const dir = mkdtempSync(join(tmpdir(), 'kvts-lc-'));
  const file = join(dir, 'vm.yaml');
  writeFileSync(file, manifest(runStrategy));
  const store = await EmbeddedStore.open();
  const objects = await loadAndAdmit([file], new ImageStore(join(dir, 'images')));
  const applied = await applyObjects(store, objects);
  const t: Target = {
    client: store,
    namespace: 'default',
    where: 'test',
    subresource: () => Promise.reject(new Error('unused')),
    close: () => {},
  };
  const vm = () =>
    store.get<KubeObject & { spec: { runStrategy?: string }; status?: Record<string, unknown> }>(
      VirtualMachineType,
      't1',
      'default',
    );
  return { store, t, applied, vm, file, dir };
}

describe('virtctl start/stop/restart', () => {
  it('apply creates, then reports an identical manifest unchanged', async () => {
    const { store, applied, file, dir } = await setup('Halted');
    expect(applied).toEqual([
      { kind: 'VirtualMachine', namespace: 'default', name: 't1', action: 'created' },
    ]);
    const again = await applyObjects(store, await loadAndAdmit([file], new ImageStore(join(dir, 'images'))));
    expect(again[0]?.action).toBe('unchanged');
  });

  it('start turns Halted into Always; stop turns it back into Halted', async () => {
    const { t, vm } = await setup('Halted');
    await startVm(t.client, 'default', 't1');
    expect((await vm()).spec.runStrategy).toBe('Always');
    await stopVm(t.client, 'default', 't1');
    expect((await vm()).spec.runStrategy).toBe('Halted');
    await expect(stopVm(t.client, 'default', 't1')).rejects.toThrow(
      'Operation cannot be fulfilled on virtualmachine.kubevirt.io "t1": VM is not running',
    );
  });

  it('start paused asks Start with paused=true (Halted and Manual alike); dryRun changes nothing', async () => {
    for (const strategy of ['Halted', 'Manual']) {
      const { t, vm } = await setup(strategy);
      await startVm(t.client, 'default', 't1', { paused: true, dryRun: ['All'] });
      expect((await vm()).status?.stateChangeRequests).toBeUndefined();
      expect((await vm()).spec.runStrategy).toBe(strategy);
      await startVm(t.client, 'default', 't1', { paused: true });
      // virt-controller turns this into a VMI with spec.startStrategy Paused.
      expect((await vm()).status?.stateChangeRequests).toEqual([
        { action: 'Start', data: { paused: 'true' } },
      ]);
      expect((await vm()).spec.runStrategy).toBe(strategy);
    }
    const { t, vm } = await setup('Halted');
    await startVm(t.client, 'default', 't1', { dryRun: ['All'] });
    expect((await vm()).spec.runStrategy).toBe('Halted');
    await expect(startVm(t.client, 'default', 't1', { paused: 'yes' as unknown as boolean })).rejects.toThrow(
      'startOptions.paused: must be true or false',
    );
  });

  it('Manual VMs get stateChangeRequests; restart asks Stop(uid of the VMI) then Start', async () => {
    const { store, t, vm } = await setup('Manual');
    await startVm(t.client, 'default', 't1');
    expect((await vm()).status?.stateChangeRequests).toEqual([{ action: 'Start' }]);
    await expect(startVm(t.client, 'default', 't1')).rejects.toThrow(
      '"t1": unable to complete request: stop/start already underway',
    );
    // As the VM controller would: carry the request out, create the VMI.
    const cur = await vm();
    await store.updateStatus(VirtualMachineType, { ...cur, status: {} });
    const vmi = await store.create(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 't1', namespace: 'default' },
      spec: { domain: { devices: {} } },
    } as KubeObject);
    await expect(startVm(t.client, 'default', 't1')).rejects.toThrow(
      'Operation cannot be fulfilled on virtualmachine.kubevirt.io "t1": VM is already running',
    );
    // upstream's RestartOptions: only a forced restart (0) takes a grace period.
    await expect(restartVm(t.client, 'default', 't1', { gracePeriodSeconds: 30 })).rejects.toThrow(
      'only gracePeriod=0 is supported',
    );
    await restartVm(t.client, 'default', 't1');
    expect((await vm()).status?.stateChangeRequests).toEqual([
      { action: 'Stop', uid: vmi.metadata?.uid },
      { action: 'Start' },
    ]);
  });

  it('stop with a grace period lowers the VMI termination grace period first', async () => {
    const { store, t, vm } = await setup('Always');
    await store.create(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 't1', namespace: 'default' },
      spec: { domain: { devices: {} }, terminationGracePeriodSeconds: 30 },
    } as KubeObject);
    await stopVm(t.client, 'default', 't1', { gracePeriod: 0 });
    const vmi = await store.get<KubeObject & { spec: { terminationGracePeriodSeconds?: number } }>(
      VmiResource,
      't1',
      'default',
    );
    expect(vmi.spec.terminationGracePeriodSeconds).toBe(0);
    expect((await vm()).spec.runStrategy).toBe('Halted');
  });

  it('a manifest with an invalid field fails naming the file, object and field path', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvts-lc-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, manifest('Sometimes'));
    await expect(loadAndAdmit([file], new ImageStore(join(dir, 'images')))).rejects.toThrow(
      /bad\.yaml: .*VirtualMachine.*t1.*spec\.runStrategy/,
    );
  });
});
