/**
 * The launcher's NIC hotplug (./hotplug-nics) over the fake driver: a NIC added to the VMI
 * is plugged only once the network setup has its pod side (it is in the network report),
 * with the VMI network phase 2 gave (the cached MAC); `absent` unplugs it; what the
 * domain has is what the launcher reports; nothing is asked of the driver while nothing
 * changed, and a driver without NIC hotplug is left alone.
 */
import { describe, expect, it } from 'vitest';
import type { Interface, VirtualMachineInstance } from '../../../src/api/generated/types';
import type { LauncherInterface } from '../../../src/controllers/launcher-protocol/domain-report';
import { LauncherNics } from '../../../src/controllers/virt-launcher/hotplug-nics';
import { FakeDriver } from '../../../src/drivers/fake';

const vmi = (blue?: Interface): VirtualMachineInstance =>
  ({
    metadata: { name: 'v', namespace: 'ns', uid: 'u' },
    spec: {
      domain: {
        devices: { interfaces: [{ name: 'default', masquerade: {} }, ...(blue ? [blue] : [])] },
        resources: { requests: { memory: '64Mi' } },
      },
      networks: [
        { name: 'default', pod: {} },
        ...(blue ? [{ name: 'blue', multus: { networkName: 'blue-net' } }] : []),
      ],
    },
  }) as VirtualMachineInstance;

describe('launcher NIC hotplug', () => {
  it('plugs a NIC once its pod side is set up, unplugs it when absent, and reports what the domain has', async () => {
    const d = new FakeDriver();
    const started = vmi();
    await d.sync(started, { useEmulation: true });
    let report: LauncherInterface[] = [
      { name: 'default', binding: 'masquerade', mac: '02:00:00:00:00:01', podIP: '10.0.0.5' },
    ];
    const prepared: VirtualMachineInstance[] = [];
    const logs: string[] = [];
    const nics = new LauncherNics(
      {
        prepareNetwork: async (v) => {
          prepared.push(v);
          return v;
        },
        networkReport: () => report,
      },
      (m) => logs.push(m),
    );
    nics.started(started);
    expect(nics.have).toEqual([]);
    // Nothing changed: neither phase 2 nor the driver is asked.
    expect(await nics.sync(d, started)).toBe(false);
    expect(prepared).toHaveLength(0);
    // Added while this pod has no interface for it (the pod the VMI ran in): not plugged.
    const blue = { name: 'blue', bridge: {} };
    expect(await nics.sync(d, vmi(blue))).toBe(true);
    expect(nics.have).toEqual([]);
    expect(prepared).toHaveLength(1);
    // Its pod side is set up (the network cache has it): plugged.
    report = [...report, { name: 'blue', binding: 'bridge', mac: '02:00:00:00:00:02', podIP: '' }];
    expect(await nics.sync(d, vmi(blue))).toBe(true);
    expect(nics.have).toEqual(['blue']);
    expect(d.host.domains.get('ns_v')?.nics).toEqual(['default', 'blue']);
    expect(logs.at(-1)).toMatch(/^nic hotplug: attached \[blue\] detached \[\] in \d+ ms$/);
    expect(await nics.sync(d, vmi(blue))).toBe(false);
    // Unplugged.
    expect(await nics.sync(d, vmi({ ...blue, state: 'absent' }))).toBe(true);
    expect(nics.have).toEqual([]);
    expect(d.host.domains.get('ns_v')?.nics).toEqual(['default']);
    expect(logs.at(-1)).toMatch(/^nic hotplug: attached \[\] detached \[blue\]/);
  });

  it('learns what a migrated-in domain has on its first sync, and leaves drivers without NIC hotplug alone', async () => {
    const d = new FakeDriver();
    await d.sync(vmi(), { useEmulation: true });
    const nics = new LauncherNics({ networkReport: () => [] }, () => undefined);
    expect(nics.have).toBeUndefined();
    expect(await nics.sync(d, vmi({ name: 'blue', bridge: {} }))).toBe(true);
    expect(nics.have).toEqual([]);
    const bare = Object.assign(Object.create(d), { nicHotplug: undefined }) as FakeDriver;
    const other = new LauncherNics({}, () => undefined);
    expect(await other.sync(bare, vmi({ name: 'blue', bridge: {} }))).toBe(false);
    expect(other.have).toBeUndefined();
  });
});
