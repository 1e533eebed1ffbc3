/**
 * Every admitted object defaults and validates with no error: the project's fixtures
 * always, and upstream KubeVirt's 47 examples where they are present. The exceptions are
 * the fields kubevirt-ts refuses (docs/unsupported-fields.md): a manifest using one gets
 * exactly those refusals.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { admit } from '../../../src/api/validation/admission';
import { fixtureFiles, fixtureObjects, fixturesDir } from '../../support/fixtures';
import { describeUpstream } from '../../support/upstream';

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

/** Admits every object of a folder, each file with the gates its fields need. */
function admissionSuite(
  dir: string,
  gatesByFile: Record<string, string[]>,
  expected: { files: number; objects: number },
  refusedByFile: Record<string, string[]> = {},
) {
  const refusals = (file: string) => refusedByFile[file] ?? [];
  const files = fixtureFiles(dir);

  it(`are all present (${expected.files} manifests)`, () => {
    expect(files).toHaveLength(expected.files);
  });

  const cases = files.flatMap((file) =>
    fixtureObjects(file, dir)
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
    expect(cases.length).toBe(expected.objects);
  });

  it.each(cases)('$file ($kind) defaults and validates with no error', ({ file }) => {
    const config = createClusterConfig(
      {},
      { hostArchitecture: 'amd64', featureGates: gatesByFile[file] ?? [] },
    );
    const errors = fixtureObjects(file, dir).flatMap((o) => admit(o.object, config).errors);
    expect(errors.map((e) => e.path)).toEqual(refusals(file));
    expect(errors.every((e) => e.type === 'FieldValueNotSupported' && /not supported/.test(e.message))).toBe(
      true,
    );
  });

  it.each(Object.entries(gatesByFile))('%s is rejected without the %s gate', (file) => {
    const config = createClusterConfig({}, { hostArchitecture: 'amd64' });
    const errors = fixtureObjects(file, dir)
      .flatMap((o) => admit(o.object, config).errors)
      .filter((e) => !refusals(file).includes(e.path));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => /feature gate is not enabled/.test(e.message))).toBe(true);
  });
}

describe('fixture manifests', () => {
  admissionSuite(
    fixturesDir,
    {
      'vmi-hostdisk.yaml': ['HostDisk'],
      'vmi-hostdevice.yaml': ['HostDevices'],
      'vmi-gpu-dra.yaml': ['GPUsWithDRA'],
      'vmi-sidecar-hook.yaml': ['Sidecar'],
      'vm-sidecar-hook-configmap.yaml': ['Sidecar'],
    },
    { files: 45, objects: 43 },
    {
      'vmi-gpu-dra.yaml': [
        'spec.resourceClaims',
        'spec.domain.devices.gpus[0].claimName',
        'spec.domain.devices.gpus[0].requestName',
      ],
    },
  );
});

describeUpstream('upstream examples', (upstream) => {
  admissionSuite(
    upstream.examplesDir,
    {
      'vmi-host-disk.yaml': ['HostDisk'],
      'vmi-usb.yaml': ['HostDevices'],
      'vmi-dra-pgpu.yaml': ['GPUsWithDRA'],
      'vmi-with-sidecar-hook.yaml': ['Sidecar'],
      'vmi-with-sidecar-hook-configmap.yaml': ['Sidecar'],
      'vm-cirros-with-sidecar-hook-configmap.yaml': ['Sidecar'],
    },
    { files: 47, objects: 42 },
    {
      'vmi-dra-pgpu.yaml': [
        'spec.resourceClaims',
        'spec.domain.devices.gpus[0].claimName',
        'spec.domain.devices.gpus[0].requestName',
      ],
    },
  );
});
