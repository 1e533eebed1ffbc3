import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { repoRoot } from '../../../scripts/gen-api';
import {
  canonicalName,
  defaultCdiSwaggerPath,
  generateCdiFiles,
  readCdiSwagger,
} from '../../../scripts/gen-cdi-api';
import { apiSchemas } from '../../../src/api/generated/cdi/schemas';

const haveCdi = existsSync(defaultCdiSwaggerPath);
// An upstream-compatibility check: CDI's swagger.json is an input the project is checked
// against, not part of it, so a user's clone has none (set KUBEVIRT_TS_CDI_DIR to run it).
if (!haveCdi) console.warn(`skipping the gen-cdi-api drift check: no ${defaultCdiSwaggerPath}`);

describe.skipIf(!haveCdi)(
  `gen-cdi-api output from upstream CDI's swagger.json (skipped where ${defaultCdiSwaggerPath} is absent)`,
  () => {
    it('committed types, schemas and CRDs equal the generator output (run `npm run gen:cdi-api` on drift)', () => {
      const files = generateCdiFiles(readCdiSwagger());
      expect([...files.keys()].sort()).toEqual([
        'crds/cdi.kubevirt.io_cdiconfigs.yaml',
        'crds/cdi.kubevirt.io_datasources.yaml',
        'crds/cdi.kubevirt.io_datavolumes.yaml',
        'crds/cdi.kubevirt.io_storageprofiles.yaml',
        'src/api/generated/cdi/schemas.ts',
        'src/api/generated/cdi/types.ts',
      ]);
      for (const [rel, content] of files)
        expect(readFileSync(path.join(repoRoot, rel), 'utf8'), rel).toBe(content);
    });
  },
);

describe('committed CDI API', () => {
  it('renames CDI’s short Kubernetes names to KubeVirt’s', () => {
    expect(canonicalName('v1.ObjectMeta')).toBe('k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta');
    expect(canonicalName('v1.PersistentVolumeClaimSpec')).toBe(
      'k8s.io.api.core.v1.PersistentVolumeClaimSpec',
    );
    expect(canonicalName('resource.Quantity')).toBe('k8s.io.apimachinery.pkg.api.resource.Quantity');
    expect(canonicalName('v1beta1.DataVolume')).toBe('v1beta1.DataVolume');
  });

  it('has the DataVolume CRD as upstream registers it, and StorageProfile (absent from the swagger)', () => {
    const dvCrd = parse(readFileSync(path.join(repoRoot, 'crds/cdi.kubevirt.io_datavolumes.yaml'), 'utf8'));
    expect(dvCrd.metadata.name).toBe('datavolumes.cdi.kubevirt.io');
    expect(dvCrd.spec.names).toMatchObject({
      kind: 'DataVolume',
      shortNames: ['dv', 'dvs'],
      categories: ['all'],
    });
    expect(dvCrd.spec.scope).toBe('Namespaced');
    const v = dvCrd.spec.versions[0];
    expect(v.additionalPrinterColumns.map((c: { name: string }) => c.name)).toEqual([
      'Phase',
      'Progress',
      'Restarts',
      'Age',
    ]);
    expect(v.subresources).toEqual({ status: {} });
    expect(Object.keys(v.schema.openAPIV3Schema.properties.spec.properties.source.properties).sort()).toEqual(
      ['blank', 'gcs', 'http', 'imageio', 'pvc', 'registry', 's3', 'snapshot', 'upload', 'vddk'],
    );
    const sp = parse(readFileSync(path.join(repoRoot, 'crds/cdi.kubevirt.io_storageprofiles.yaml'), 'utf8'));
    expect(sp.spec.scope).toBe('Cluster');
    expect(
      sp.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.claimPropertySets.items
        .required,
    ).toEqual(['accessModes', 'volumeMode']);
    for (const t of [
      'DataVolume',
      'DataSource',
      'StorageProfile',
      'CDIConfig',
      'UploadTokenRequest',
      'ObjectMeta',
    ])
      expect(apiSchemas[t], t).toBeDefined();
  });
});
