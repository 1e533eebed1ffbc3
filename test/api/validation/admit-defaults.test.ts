/**
 * admitDefaults is admit's defaulting half (what virt-api's mutating webhooks answer): the
 * same defaulted object as admit for every fixture, and no validation, so an invalid but
 * defaultable object is defaulted and left for admit (the validating webhooks) to refuse.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { admit, admitDefaults } from '../../../src/api/validation/admission';
import { fixtureFiles, fixtureObjects } from '../../support/fixtures';

const config = createClusterConfig(
  {},
  { hostArchitecture: 'amd64', featureGates: ['HostDisk', 'HostDevices', 'GPUsWithDRA', 'Sidecar'] },
);

const vmi = (disks: unknown[]) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'v', namespace: 'default' },
  spec: {
    domain: { devices: { disks }, resources: { requests: { memory: '64Mi' } } },
    volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
  },
});

describe('admitDefaults', () => {
  const objects = fixtureFiles().flatMap((f) => fixtureObjects(f).map((o) => ({ file: f, ...o })));

  it('defaults every fixture object exactly as admit does', () => {
    expect(objects.length).toBeGreaterThan(40);
    for (const { file, object } of objects) {
      const whole = admit(structuredClone(object), config);
      const half = admitDefaults(structuredClone(object), config);
      expect(half.errors, file).toEqual([]);
      expect(half.object, file).toEqual(whole.object);
    }
  });

  it('does not validate: duplicate disk names are defaulted, and admit refuses them with the field path', () => {
    const o = vmi([
      { name: 'root', disk: {} },
      { name: 'root', disk: {} },
    ]);
    const half = admitDefaults(o, config);
    expect(half.errors).toEqual([]);
    const disks = (half.object.spec as { domain: { devices: { disks: { disk: { bus?: string } }[] } } })
      .domain.devices.disks;
    // The bus a valid one-disk VMI gets, on both.
    const bus = (
      admit(vmi([{ name: 'root', disk: {} }]), config).object.spec as typeof half.object.spec & {
        domain: { devices: { disks: { disk: { bus: string } }[] } };
      }
    ).domain.devices.disks[0]?.disk.bus;
    expect(bus).toMatch(/^(virtio|sata|scsi)$/);
    expect(disks.map((d) => d.disk.bus)).toEqual([bus, bus]);
    const whole = admit(o, config);
    expect(whole.errors.map((e) => e.path)).toContain('spec.domain.devices.disks[1].name');
  });

  it('stops at a shape error, as admit does, returning the object unchanged', () => {
    const o = vmi([{ name: 7, disk: {} }]);
    const half = admitDefaults(o, config);
    expect(half.errors.map((e) => e.path)).toEqual(['spec.domain.devices.disks[0].name']);
    expect(half.object).toBe(o);
    expect(admit(o, config).errors).toEqual(half.errors);
  });
});
