/**
 * NIC hotplug's decision in the VM controller (upstream's pkg/network/controllers/vm.go):
 * the patch that appends a bridge interface on a multus network to a running VMI, the
 * `absent` state copied onto it, an unplugged interface dropped once its status entry is
 * gone, the refusals (SR-IOV, other bindings, the pod network, a VMI that cannot migrate),
 * the wait for LiveMigratable, and the restart comparison that leaves hotplugged NICs out.
 */
import { describe, expect, it } from 'vitest';
import type { Interface, Network, VirtualMachineInstance } from '../../../../src/api/generated/types';
import {
  interfaceChange,
  withoutHotplugInterfaces,
} from '../../../../src/controllers/virt-controller/vm/interface-hotplug';

const POD: Network = { name: 'default', pod: {} };
const BLUE: Network = { name: 'blue', multus: { networkName: 'blue-net' } };
const DEFAULT_IF: Interface = { name: 'default', masquerade: {} };
const BLUE_IF: Interface = { name: 'blue', bridge: {} };
const MIGRATABLE = { conditions: [{ type: 'LiveMigratable', status: 'True' }] };

const vmi = (ifaces: Interface[], nets: Network[], status: object = MIGRATABLE): VirtualMachineInstance =>
  ({
    spec: { domain: { devices: { interfaces: ifaces } }, networks: nets },
    status: { phase: 'Running', ...status },
  }) as unknown as VirtualMachineInstance;

describe('interfaceChange', () => {
  it('appends a bridge interface on a multus network and its network with a tested patch', () => {
    const live = vmi([DEFAULT_IF], [POD]);
    expect(interfaceChange(vmi([DEFAULT_IF, BLUE_IF], [POD, BLUE]), live)).toEqual({
      patch: [
        { op: 'test', path: '/spec/networks', value: [POD] },
        { op: 'add', path: '/spec/networks', value: [POD, BLUE] },
        { op: 'test', path: '/spec/domain/devices/interfaces', value: [DEFAULT_IF] },
        { op: 'add', path: '/spec/domain/devices/interfaces', value: [DEFAULT_IF, BLUE_IF] },
      ],
    });
    // Nothing to do once the VMI has it.
    expect(
      interfaceChange(vmi([DEFAULT_IF, BLUE_IF], [POD, BLUE]), vmi([DEFAULT_IF, BLUE_IF], [POD, BLUE])),
    ).toEqual({});
    // A VMI with no interfaces or networks at all: the lists are added, not tested.
    const bare = { spec: { domain: { devices: {} } }, status: { phase: 'Running', ...MIGRATABLE } };
    expect(interfaceChange(vmi([BLUE_IF], [BLUE]), bare as unknown as VirtualMachineInstance)).toEqual({
      patch: [
        { op: 'add', path: '/spec/networks', value: [BLUE] },
        { op: 'add', path: '/spec/domain/devices/interfaces', value: [BLUE_IF] },
      ],
    });
    // An interface added already absent is not plugged.
    expect(interfaceChange(vmi([DEFAULT_IF, { ...BLUE_IF, state: 'absent' }], [POD, BLUE]), live)).toEqual(
      {},
    );
  });

  it("copies state absent onto the VMI's interface, and drops it once its status entry is gone", () => {
    const inStatus = { ...MIGRATABLE, interfaces: [{ name: 'default' }, { name: 'blue' }] };
    const live = vmi([DEFAULT_IF, BLUE_IF], [POD, BLUE], inStatus);
    const absent = { ...BLUE_IF, state: 'absent' };
    const c = interfaceChange(vmi([DEFAULT_IF, absent], [POD, BLUE]), live);
    expect(c.patch?.[3]).toEqual({
      op: 'add',
      path: '/spec/domain/devices/interfaces',
      value: [DEFAULT_IF, absent],
    });
    expect(c.patch?.[1]).toEqual({ op: 'add', path: '/spec/networks', value: [POD, BLUE] });
    // The domain still has it (status lists it): kept.
    const unplugging = vmi([DEFAULT_IF, absent], [POD, BLUE], inStatus);
    expect(interfaceChange(vmi([DEFAULT_IF, absent], [POD, BLUE]), unplugging)).toEqual({});
    // Gone from the domain: the interface and its network leave the VMI, even from a VMI
    // that cannot migrate (an unplug needs no migration to leave the guest).
    const gone = vmi([DEFAULT_IF, absent], [POD, BLUE], {
      conditions: [{ type: 'LiveMigratable', status: 'False' }],
      interfaces: [{ name: 'default' }],
    });
    expect(interfaceChange(vmi([DEFAULT_IF, absent], [POD, BLUE]), gone).patch?.slice(1, 4)).toEqual([
      { op: 'add', path: '/spec/networks', value: [POD] },
      { op: 'test', path: '/spec/domain/devices/interfaces', value: [DEFAULT_IF, absent] },
      { op: 'add', path: '/spec/domain/devices/interfaces', value: [DEFAULT_IF] },
    ]);
  });

  it('refuses SR-IOV, other bindings and the pod network with a restart and the reason', () => {
    const live = vmi([], []);
    const sriov = interfaceChange(vmi([{ name: 'blue', sriov: {} }], [BLUE]), live);
    expect(sriov.restart).toBe(
      'spec.template.spec.domain.devices.interfaces[0]: hotplugging an SR-IOV interface (blue) is not supported; it is added at the next start',
    );
    const masq = interfaceChange(vmi([{ name: 'blue', masquerade: {} }], [BLUE]), live);
    expect(masq.restart).toBe(
      'spec.template.spec.domain.devices.interfaces[0]: only a bridge interface on a secondary (multus) network can be hotplugged; blue is added at the next start',
    );
    expect(interfaceChange(vmi([{ name: 'default', bridge: {} }], [POD]), live).restart).toMatch(
      /only a bridge interface on a secondary \(multus\) network can be hotplugged; default/,
    );
  });

  it('needs a restart for a VMI that cannot migrate, and waits until LiveMigratable is reported', () => {
    const wanted = vmi([DEFAULT_IF, BLUE_IF], [POD, BLUE]);
    const stuck = vmi([DEFAULT_IF], [POD], {
      conditions: [
        { type: 'LiveMigratable', status: 'False', message: 'cannot migrate VMI: PVC x is not shared' },
      ],
    });
    expect(interfaceChange(wanted, stuck).restart).toBe(
      'NIC hotplug needs a live migration (the launcher pod cannot get an interface while it runs) and the VMI is not live-migratable: cannot migrate VMI: PVC x is not shared',
    );
    expect(interfaceChange(wanted, vmi([DEFAULT_IF], [POD], {}))).toEqual({
      wait: "the VMI's LiveMigratable condition is not reported yet",
    });
  });
});

describe('withoutHotplugInterfaces', () => {
  it('leaves out the NICs hotplug carries and keeps every other difference', () => {
    const a = vmi([DEFAULT_IF, BLUE_IF], [POD, BLUE]).spec;
    const b = vmi([DEFAULT_IF], [POD]).spec;
    const [x, y] = withoutHotplugInterfaces(a, b);
    expect(x).toEqual(y);
    const absent = vmi([DEFAULT_IF, { ...BLUE_IF, state: 'absent' }], [POD, BLUE]).spec;
    const [p, q] = withoutHotplugInterfaces(absent, a);
    expect(p).toEqual(q);
    // A change to an interface both have (its model) still counts.
    const model = vmi([DEFAULT_IF, { ...BLUE_IF, model: 'e1000' }], [POD, BLUE]).spec;
    const [m, n] = withoutHotplugInterfaces(model, a);
    expect(m).not.toEqual(n);
    // So does a masquerade interface added on the pod network.
    const [s, t] = withoutHotplugInterfaces(vmi([DEFAULT_IF], [POD]).spec, vmi([], []).spec);
    expect(s).not.toEqual(t);
  });
});
