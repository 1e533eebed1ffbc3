import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { admit } from '../../../src/api/validation/admission';
import { exampleFiles, exampleObjects } from './examples';

/** The feature gates the examples' fields need. */
const gatesByFile: Record<string, string[]> = {
  'vmi-host-disk.yaml': ['HostDisk'],
  'vmi-usb.yaml': ['HostDevices'],
  'vmi-dra-pgpu.yaml': ['GPUsWithDRA'],
  'vmi-with-sidecar-hook.yaml': ['Sidecar'],
  'vmi-with-sidecar-hook-configmap.yaml': ['Sidecar'],
  'vm-cirros-with-sidecar-hook-configmap.yaml': ['Sidecar'],
};

const admitted = [
  'VirtualMachine',
  'VirtualMachineInstance',
  'VirtualMachineInstanceReplicaSet',
  'VirtualMachinePool',
  'VirtualMachineInstanceMigration',
  'VirtualMachineInstancetype',
  'VirtualMachineClusterInstancetype',
  'VirtualMachinePreference',
  'VirtualMachineClusterPreference',
];

describe('upstream examples', () => {
  const files = exampleFiles();

  it('are all present (47 manifests)', () => {
    expect(files).toHaveLength(47);
  });

  const cases = files.flatMap((file) =>
    exampleObjects(file)
      .filter((o) => admitted.includes(o.kind))
      .map((o) => ({ file, kind: o.kind })),
  );

  it('cover every admitted kind', () => {
    expect(new Set(cases.map((c) => c.kind))).toEqual(
      new Set([
        'VirtualMachine',
        'VirtualMachineInstance',
        'VirtualMachineInstanceReplicaSet',
        'VirtualMachinePool',
        'VirtualMachineInstanceMigration',
        'VirtualMachineInstancetype',
        'VirtualMachineClusterInstancetype',
        'VirtualMachinePreference',
      ]),
    );
    expect(cases.length).toBe(42);
  });

  it.each(cases)('$file ($kind) defaults and validates with no error', ({ file }) => {
    const config = createClusterConfig(
      {},
      { hostArchitecture: 'amd64', featureGates: gatesByFile[file] ?? [] },
    );
    for (const o of exampleObjects(file)) {
      const result = admit(o.object, config);
      expect(result.errors).toEqual([]);
    }
  });

  it.each(Object.entries(gatesByFile))('%s is rejected without the %s gate', (file) => {
    const config = createClusterConfig({}, { hostArchitecture: 'amd64' });
    const errors = exampleObjects(file).flatMap((o) => admit(o.object, config).errors);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => /feature gate is not enabled/.test(e.message))).toBe(true);
  });
});
