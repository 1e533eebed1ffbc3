/**
 * expand-spec as upstream's Expand: default disks for volumes without one and the default
 * pod interface before the preference applies (so its disk bus and interface model reach
 * them), then the spec defaults; a VM without matchers is returned unchanged.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachine } from '../../../src/api/generated/types';
import { createInstancetypeCatalog } from '../../../src/api/instancetype/catalog';
import { expandVirtualMachineSpec } from '../../../src/api/instancetype/expand-spec';
import { fixtureObjects } from '../../support/fixtures';

const catalog = createInstancetypeCatalog(
  ['cluster-instancetype-small.yaml', 'preference-virtio.yaml'].flatMap((f) =>
    fixtureObjects(f).map((o) => o.object),
  ),
);
const config = createClusterConfig({}, { hostArchitecture: 'amd64' });

const vm = (matchers: boolean): VirtualMachine => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'v', namespace: 'default' },
  spec: {
    ...(matchers
      ? {
          instancetype: { kind: 'VirtualMachineClusterInstancetype', name: 'cluster-small' },
          preference: { kind: 'VirtualMachinePreference', name: 'virtio' },
        }
      : {}),
    template: {
      spec: {
        domain: { devices: {} },
        volumes: [
          { name: 'root', containerDisk: { image: 'example/tiny:1' } },
          { name: 'cloudinit', cloudInitNoCloud: { userData: '#cloud-config\n' } },
        ],
      },
    },
  },
});

describe('expand-spec (upstream Expand)', () => {
  it('adds a disk per volume and the pod interface, with the preference applied to them, then the spec defaults', () => {
    const { vm: out, errors } = expandVirtualMachineSpec(vm(true), catalog, config);
    expect(errors).toEqual([]);
    const spec = out.spec.template.spec;
    expect(spec?.domain.devices.disks).toEqual([
      { name: 'root', disk: { bus: 'virtio' } },
      { name: 'cloudinit', disk: { bus: 'virtio' } },
    ]);
    // The default interface is upstream's default binding (bridge), with the preference's model.
    expect(spec?.domain.devices.interfaces).toEqual([{ name: 'default', bridge: {}, model: 'virtio' }]);
    expect(spec?.networks).toEqual([{ name: 'default', pod: {} }]);
    expect(spec?.domain.machine?.type).toBe('q35');
    expect(spec?.domain.memory?.guest).toBe('128Mi');
    expect(spec?.volumes?.[0]?.containerDisk?.imagePullPolicy).toBe('IfNotPresent');
    expect(out.spec.instancetype).toBeUndefined();
    expect(out.spec.preference).toBeUndefined();
  });

  it('returns a VM without instance type or preference unchanged', () => {
    const v = vm(false);
    expect(expandVirtualMachineSpec(v, catalog, config).vm).toBe(v);
  });
});
