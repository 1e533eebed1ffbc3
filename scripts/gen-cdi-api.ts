/**
 * Generates CDI's API (cdi.kubevirt.io/v1beta1 and upload.cdi.kubevirt.io/v1beta1) the way
 * scripts/gen-api.ts and scripts/gen-crds.ts generate KubeVirt's, from upstream CDI's
 * OpenAPI v2 document (swagger.json in $KUBEVIRT_TS_CDI_DIR, else ../shared/cdi):
 *
 *   src/api/generated/cdi/types.ts    the types (DataVolume, DataSource, StorageProfile, ...)
 *   src/api/generated/cdi/schemas.ts  their compact field schemas
 *   crds/cdi.kubevirt.io_<plural>.yaml  a CRD per kind of src/api/cdi/kinds.ts
 *
 * CDI's document names Kubernetes types by their short package (`v1.ObjectMeta`,
 * `resource.Quantity`); they are renamed to the full names KubeVirt's document uses, so
 * the same naming contract and schema conversion apply. StorageProfile is missing from the
 * document (CDI's openapi-gen leaves it out): its definitions are added here, transcribed
 * from CDI's api/core/v1beta1/types.go.
 *
 * Usage: `npm run gen:cdi-api [-- path/to/swagger.json]`. Output is deterministic; a test
 * regenerates it and compares with the committed files.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { cdiKinds } from '../src/api/cdi/kinds';
import {
  type GeneratedFrom,
  generateSchemas,
  generateTypes,
  repoRoot,
  type SwaggerDocument,
} from './gen-api';
import { crdFileName, crdFor, crdsDir } from './gen-crds';

export const upstreamCdiDir = process.env.KUBEVIRT_TS_CDI_DIR
  ? path.resolve(process.env.KUBEVIRT_TS_CDI_DIR)
  : path.resolve(repoRoot, '../shared/cdi');
export const defaultCdiSwaggerPath = path.join(upstreamCdiDir, 'swagger.json');

const FROM: GeneratedFrom = {
  script: 'scripts/gen-cdi-api.ts',
  document: "upstream CDI's swagger.json",
  command: 'npm run gen:cdi-api',
};

/** apimachinery meta/v1 definitions of CDI's document; its other `v1.` ones are core/v1. */
const META_V1 = new Set([
  'APIGroup',
  'APIGroupList',
  'APIResource',
  'APIResourceList',
  'Condition',
  'DeleteOptions',
  'Duration',
  'FieldsV1',
  'GroupVersionForDiscovery',
  'LabelSelector',
  'LabelSelectorRequirement',
  'ListMeta',
  'ManagedFieldsEntry',
  'ObjectMeta',
  'OwnerReference',
  'Patch',
  'Preconditions',
  'RootPaths',
  'ServerAddressByClientCIDR',
  'Status',
  'StatusCause',
  'StatusDetails',
  'Time',
  'WatchEvent',
]);

/** CDI's definition name -> the name KubeVirt's document would give it. */
export function canonicalName(def: string): string {
  if (def === 'resource.Quantity') return 'k8s.io.apimachinery.pkg.api.resource.Quantity';
  if (def === 'runtime.RawExtension') return 'k8s.io.apimachinery.pkg.runtime.RawExtension';
  if (def === 'api.NodePlacement') return 'v1beta1.NodePlacement';
  if (def.startsWith('v1.')) {
    const short = def.slice(3);
    return META_V1.has(short)
      ? `k8s.io.apimachinery.pkg.apis.meta.v1.${short}`
      : `k8s.io.api.core.v1.${short}`;
  }
  return def;
}

const ref = (def: string) => ({ $ref: `#/definitions/${def}` });
const str = (description: string) => ({ description, type: 'string' });

/** StorageProfile and its parts (CDI types.go), absent from CDI's swagger.json. */
const STORAGE_PROFILE_DEFS: SwaggerDocument['definitions'] = {
  'v1beta1.StorageProfile': {
    description: 'StorageProfile provides a CDI specific recommendation for storage parameters',
    type: 'object',
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: ref('k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta'),
      spec: ref('v1beta1.StorageProfileSpec'),
      status: ref('v1beta1.StorageProfileStatus'),
    },
  },
  'v1beta1.StorageProfileSpec': {
    description: 'StorageProfileSpec defines specification for StorageProfile',
    type: 'object',
    properties: {
      cloneStrategy: {
        description: 'CloneStrategy defines the preferred method for performing a CDI clone',
        type: 'string',
        enum: ['copy', 'snapshot', 'csi-clone'],
      },
      claimPropertySets: {
        description: 'ClaimPropertySets is a provided set of properties applicable to PVC',
        type: 'array',
        items: ref('v1beta1.ClaimPropertySet'),
      },
      dataImportCronSourceFormat: {
        description:
          'DataImportCronSourceFormat defines the format of the DataImportCron-created disk image sources',
        type: 'string',
        enum: ['pvc', 'snapshot'],
      },
      snapshotClass: str(
        'SnapshotClass is optional specific VolumeSnapshotClass for CloneStrategySnapshot. If not set, a VolumeSnapshotClass is chosen according to the provisioner.',
      ),
    },
  },
  'v1beta1.StorageProfileStatus': {
    description: 'StorageProfileStatus provides the most recently observed status of the StorageProfile',
    type: 'object',
    properties: {
      storageClass: str('The StorageClass name for which capabilities are defined'),
      provisioner: str('The Storage class provisioner plugin name'),
      cloneStrategy: {
        description: 'CloneStrategy defines the preferred method for performing a CDI clone',
        type: 'string',
        enum: ['copy', 'snapshot', 'csi-clone'],
      },
      claimPropertySets: {
        description: 'ClaimPropertySets computed from the spec and detected in the system',
        type: 'array',
        items: ref('v1beta1.ClaimPropertySet'),
      },
      dataImportCronSourceFormat: { type: 'string', enum: ['pvc', 'snapshot'] },
      snapshotClass: { type: 'string' },
    },
  },
  'v1beta1.ClaimPropertySet': {
    description: 'ClaimPropertySet is a set of properties applicable to PVC',
    type: 'object',
    required: ['accessModes', 'volumeMode'],
    properties: {
      accessModes: {
        description: 'AccessModes contains the desired access modes the volume should have.',
        type: 'array',
        items: {
          type: 'string',
          enum: ['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod'],
        },
      },
      volumeMode: {
        description: 'VolumeMode defines what type of volume is required by the claim.',
        type: 'string',
        enum: ['Block', 'Filesystem'],
      },
    },
  },
};

/** CDI's document with KubeVirt's definition names and StorageProfile added. */
export function readCdiSwagger(file = defaultCdiSwaggerPath): SwaggerDocument {
  if (!existsSync(file)) {
    throw new Error(
      `${file}: no such file. Pass the path of upstream CDI's swagger.json, set KUBEVIRT_TS_CDI_DIR, or place it at ../shared/cdi/swagger.json`,
    );
  }
  const raw = JSON.parse(readFileSync(file, 'utf8')) as SwaggerDocument;
  // Renaming every $ref in the serialized text renames all uses at once.
  const text = JSON.stringify(raw.definitions).replace(/"#\/definitions\/([^"]+)"/g, (_m, def: string) =>
    JSON.stringify(`#/definitions/${canonicalName(def)}`),
  );
  const defs = JSON.parse(text) as SwaggerDocument['definitions'];
  const definitions: SwaggerDocument['definitions'] = {};
  for (const [name, schema] of Object.entries(defs)) definitions[canonicalName(name)] = schema;
  return { definitions: { ...definitions, ...STORAGE_PROFILE_DEFS } };
}

export const cdiTypesOutPath = path.join(repoRoot, 'src/api/generated/cdi/types.ts');
export const cdiSchemasOutPath = path.join(repoRoot, 'src/api/generated/cdi/schemas.ts');

const CRD_HEADER = "# Generated by scripts/gen-cdi-api.ts from upstream CDI's swagger.json. DO NOT EDIT.\n";

/** Every generated file's path (relative to the repository) and content. */
export function generateCdiFiles(doc: SwaggerDocument): Map<string, string> {
  const files = new Map<string, string>();
  files.set(
    path.relative(repoRoot, cdiTypesOutPath),
    generateTypes(
      doc,
      FROM,
      'TypeScript types for the cdi.kubevirt.io API groups and the Kubernetes types they use.',
    ),
  );
  files.set(path.relative(repoRoot, cdiSchemasOutPath), generateSchemas(doc, FROM));
  for (const info of cdiKinds) {
    const body = stringify(crdFor(doc, info), { lineWidth: 0, aliasDuplicateObjects: false });
    files.set(path.relative(repoRoot, path.join(crdsDir, crdFileName(info))), `${CRD_HEADER}${body}`);
  }
  return files;
}

function main(): void {
  const doc = readCdiSwagger(process.argv[2] ?? defaultCdiSwaggerPath);
  for (const [rel, content] of generateCdiFiles(doc)) {
    mkdirSync(path.dirname(path.join(repoRoot, rel)), { recursive: true });
    writeFileSync(path.join(repoRoot, rel), content);
    console.log(`wrote ${rel}`);
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    main();
  } catch (err) {
    console.error(`gen-cdi-api: ${(err as Error).message}`);
    process.exit(1);
  }
}
