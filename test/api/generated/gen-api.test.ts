import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  generateSchemas,
  generateTypes,
  readSwagger,
  schemasOutPath,
  typeNames,
  typesOutPath,
} from '../../../scripts/gen-api';
import { apiSchemas, apiTypeNames } from '../../../src/api/generated/schemas';
import { describeUpstream } from '../../support/upstream';

describeUpstream("gen-api output from upstream's swagger.json", (upstream) => {
  const doc = readSwagger(upstream.swaggerPath);

  it('committed types.ts equals the generator output (run `npm run gen:api` on drift)', () => {
    expect(readFileSync(typesOutPath, 'utf8')).toBe(generateTypes(doc));
  });

  it('committed schemas.ts equals the generator output (run `npm run gen:api` on drift)', () => {
    expect(readFileSync(schemasOutPath, 'utf8')).toBe(generateSchemas(doc));
  });

  it('follows the naming contract, prefixing only colliding names', () => {
    const names = typeNames(doc);
    expect(names.get('v1.VirtualMachineInstance')).toBe('VirtualMachineInstance');
    expect(names.get('v1.KubeVirtConfiguration')).toBe('KubeVirtConfiguration');
    expect(names.get('v1beta1.VirtualMachinePool')).toBe('VirtualMachinePool');
    expect(names.get('v1beta1.VirtualMachine')).toBe('V1beta1VirtualMachine');
    expect(names.get('v1beta1.Condition')).toBe('V1beta1Condition');
    expect(names.get('v1alpha1.MigrationPolicy')).toBe('MigrationPolicy');
    expect(names.get('v1.Condition')).toBe('Condition');
    expect(names.get('k8s.io.apimachinery.pkg.apis.meta.v1.Condition')).toBe('MetaCondition');
    expect(names.get('k8s.io.api.core.v1.PersistentVolumeClaimVolumeSource')).toBe(
      'CorePersistentVolumeClaimVolumeSource',
    );
    expect(names.get('k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta')).toBe('ObjectMeta');
    expect(names.get('k8s.io.api.core.v1.Toleration')).toBe('Toleration');
  });

  it('emits doc comments, required fields, enums and special aliases', () => {
    const types = generateTypes(doc);
    expect(types).toContain('export type Quantity = string | number;');
    expect(types).toContain('export type IntOrString = string | number;');
    expect(types).toContain('export type Time = string;');
    // Disk.name is required upstream; bootOrder is not.
    const disk = types.slice(types.indexOf('export interface Disk {'));
    const diskBody = disk.slice(0, disk.indexOf('\n}\n'));
    expect(diskBody).toContain('\n  name: string;');
    expect(diskBody).toContain('\n  bootOrder?: number;');
    expect(types).toContain('dnsPolicy?: "ClusterFirst" | "ClusterFirstWithHostNet" | "Default" | "None";');
    expect(types).toContain('/** Name is the device name */');
    expect(types).toContain('spec: VirtualMachineSpec;');
  });
});

describe('committed generated API', () => {
  it('covers every kind of the kubevirt.io groups and what they reference', () => {
    for (const t of [
      'VirtualMachine',
      'VirtualMachineInstance',
      'VirtualMachineInstanceReplicaSet',
      'VirtualMachineInstanceMigration',
      'VirtualMachineInstancePreset',
      'KubeVirt',
      'VirtualMachinePool',
      'MigrationPolicy',
      'VirtualMachineInstancetype',
      'VirtualMachineClusterInstancetype',
      'VirtualMachinePreference',
      'VirtualMachineClusterPreference',
      'VirtualMachineSnapshot',
      'VirtualMachineSnapshotContent',
      'VirtualMachineRestore',
      'VirtualMachineExport',
      'VirtualMachineClone',
      'ObjectMeta',
      'Affinity',
      'LabelSelector',
    ]) {
      expect(apiSchemas[t], t).toBeDefined();
    }
    expect(apiTypeNames['v1.DomainSpec']).toBe('DomainSpec');
    // Every ref in the compact schemas resolves.
    const refs = JSON.stringify(apiSchemas).match(/"ref":"[A-Za-z0-9]+"/g) ?? [];
    for (const r of refs) expect(apiSchemas[r.slice(7, -1)], r).toBeDefined();
  });
});
