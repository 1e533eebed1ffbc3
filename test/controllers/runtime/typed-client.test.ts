import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../src/api';
import { EmbeddedStore, typed, VirtualMachineType } from '../../../src/controllers/runtime';

describe('typed client', () => {
  it('binds a kind and accepts the generated kubevirt.io/v1 types as KubeObjects', async () => {
    const store = await EmbeddedStore.open();
    try {
      const vms = typed<VirtualMachine>(store, VirtualMachineType);
      const vm: VirtualMachine = {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: { name: 'testvm', namespace: 'default', labels: { app: 'x' } },
        spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
      };
      const created = await vms.create(vm);
      expect(created.spec.runStrategy).toBe('Halted');
      const patched = await vms.patch(
        'testvm',
        { spec: { runStrategy: 'Always' } },
        { namespace: 'default', type: 'merge' },
      );
      expect(patched.spec.runStrategy).toBe('Always');
      expect(patched.metadata?.generation).toBe(2);
      expect((await vms.list({ namespace: 'default', labelSelector: 'app=x' })).items).toHaveLength(1);
      expect((await vms.delete('testvm', { namespace: 'default' })).pending).toBe(false);
    } finally {
      await store.close();
    }
  });
});
