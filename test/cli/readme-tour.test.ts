/** The README's SDK tour, run as written (against the public entry points' sources). */
import { describe, expect, it } from 'vitest';
import { admit, createClusterConfig } from '../../src/api/index';
import { EmbeddedStore, Manager, VirtualMachineType } from '../../src/controllers/index';
import { convertVMIToXML, defaultConverterContext } from '../../src/converter/index';

describe('README SDK tour', () => {
  it('converts a VMI to domain XML after admission', () => {
    const myVmiManifest = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'tour', namespace: 'default' },
      spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
    };
    const config = createClusterConfig({ developerConfiguration: { useEmulation: true } });
    const { object: vmi, errors } = admit(myVmiManifest, config);
    expect(errors).toEqual([]);
    const xml = convertVMIToXML(
      vmi as never,
      defaultConverterContext({ kvmAvailable: false, allowEmulation: true }),
    );
    expect(xml).toContain('<domain type="qemu">');
    expect(xml).toContain('<name>default_tour</name>');
  });

  it('runs a reconciler on the embedded store', async () => {
    const client = await EmbeddedStore.open();
    const manager = new Manager({ client });
    let seen = '';
    manager.addController({
      name: 'vm-labeller',
      forType: VirtualMachineType,
      reconciler: {
        async reconcile({ namespace, name }) {
          const vm = await client.get(VirtualMachineType, name, namespace);
          if (vm.metadata?.labels?.seen) {
            seen = vm.metadata.labels.seen;
            return;
          }
          await client.patch(
            VirtualMachineType,
            name,
            { metadata: { labels: { seen: 'yes' } } },
            { namespace, type: 'merge' },
          );
        },
      },
    });
    await manager.start();
    await client.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'v', namespace: 'default' },
      spec: { template: { spec: { domain: { devices: {} } } } },
    });
    for (let i = 0; i < 200 && !seen; i++) await new Promise((r) => setTimeout(r, 10));
    await manager.stop();
    expect(seen).toBe('yes');
  });
});
