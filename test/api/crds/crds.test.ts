import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { readSwagger } from '../../../scripts/gen-api';
import {
  CRD_JSON_BUDGET,
  type CrdSchema,
  crdFileName,
  crdsDir,
  generateCrdFiles,
  isForeignCrdFile,
} from '../../../scripts/gen-crds';
import { kinds, lookupKind } from '../../../src/api/groups';
import { fixtureFiles, fixturesDir } from '../../support/fixtures';
import { describeUpstream } from '../../support/upstream';
import { structuralErrors } from './structural';

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  deprecated?: boolean;
  schema: { openAPIV3Schema: Record<string, unknown> };
  subresources?: { status?: object; scale?: Record<string, string> };
  additionalPrinterColumns?: { name: string; jsonPath: string }[];
}
interface Crd {
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; shortNames?: string[]; categories?: string[] };
    versions: CrdVersion[];
  };
}

const committed = new Map(
  readdirSync(crdsDir)
    // CDI's CRDs come from scripts/gen-cdi-api.ts (test/api/generated/gen-cdi-api.test.ts).
    .filter((f) => f.endsWith('.yaml') && !isForeignCrdFile(f))
    .map((f) => [f, readFileSync(path.join(crdsDir, f), 'utf8')]),
);
const crds: Crd[] = kinds.map((k) => parse(committed.get(crdFileName(k)) ?? 'null') as Crd);
const crdByName = new Map(crds.map((c) => [c.spec.names.kind, c]));

describeUpstream("gen-crds output from upstream's swagger.json", (upstream) => {
  it('committed crds/ equals the generator output (run `npm run gen:crds` on drift)', () => {
    const generated = generateCrdFiles(readSwagger(upstream.swaggerPath));
    expect([...committed.keys()].sort()).toEqual([...generated.keys()].sort());
    for (const [name, content] of generated) expect(committed.get(name), name).toBe(content);
  });
});

describe('committed CRDs', () => {
  it('all.yaml holds every CRD once', () => {
    const all = parseAllDocuments(committed.get('all.yaml')!).map((d) => d.toJSON() as Crd);
    expect(all.map((c) => c.metadata.name).sort()).toEqual(crds.map((c) => c.metadata.name).sort());
    expect(all).toHaveLength(18);
  });

  it('stays within the size kubectl apply can store in its last-applied annotation', () => {
    for (const c of crds)
      expect(JSON.stringify(c).length, c.metadata.name).toBeLessThanOrEqual(CRD_JSON_BUDGET);
  });
});

describe('CRD names, versions and subresources match upstream', () => {
  it('registers kubevirt.io kinds with their short names and category all', () => {
    const vm = crdByName.get('VirtualMachine')!;
    expect(vm.metadata.name).toBe('virtualmachines.kubevirt.io');
    expect(vm.spec.names.shortNames).toEqual(['vm', 'vms']);
    expect(vm.spec.names.categories).toEqual(['all']);
    expect(crdByName.get('VirtualMachineInstance')!.spec.names.shortNames).toEqual(['vmi', 'vmis']);
    expect(crdByName.get('VirtualMachineInstanceReplicaSet')!.spec.names.shortNames).toEqual([
      'vmirs',
      'vmirss',
    ]);
    expect(crdByName.get('VirtualMachineInstanceMigration')!.spec.names.shortNames).toEqual([
      'vmim',
      'vmims',
    ]);
    expect(crdByName.get('VirtualMachineInstancePreset')!.spec.names.shortNames).toEqual([
      'vmipreset',
      'vmipresets',
    ]);
    expect(crdByName.get('KubeVirt')!.spec.names.shortNames).toEqual(['kv', 'kvs']);
    expect(crdByName.get('VirtualMachinePool')!.spec.names.shortNames).toEqual(['vmpool', 'vmpools']);
    expect(crdByName.get('VirtualMachineInstancetype')!.spec.names.shortNames).toEqual([
      'vminstancetype',
      'vminstancetypes',
      'vmf',
      'vmfs',
    ]);
    expect(crdByName.get('VirtualMachineClusterPreference')!.spec.scope).toBe('Cluster');
    expect(crdByName.get('MigrationPolicy')!.metadata.name).toBe('migrationpolicies.migrations.kubevirt.io');
  });

  it('serves kubevirt.io v1 as storage and v1alpha3 as deprecated', () => {
    const versions = crdByName.get('VirtualMachine')!.spec.versions;
    expect(versions.map((v) => [v.name, v.served, v.storage, v.deprecated ?? false])).toEqual([
      ['v1', true, true, false],
      ['v1alpha3', true, false, true],
    ]);
    for (const c of crds)
      expect(
        c.spec.versions.filter((v) => v.storage),
        c.metadata.name,
      ).toHaveLength(1);
  });

  it('has status and scale subresources where upstream has them', () => {
    const scale = {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.labelSelector',
    };
    for (const kind of ['VirtualMachineInstanceReplicaSet', 'VirtualMachinePool']) {
      expect(crdByName.get(kind)!.spec.versions[0].subresources).toEqual({ status: {}, scale });
    }
    expect(crdByName.get('VirtualMachine')!.spec.versions[0].subresources).toEqual({ status: {} });
    expect(crdByName.get('VirtualMachineInstance')!.spec.versions[0].subresources).toBeUndefined();
  });

  it('has upstream printer columns', () => {
    const cols = (kind: string) =>
      crdByName.get(kind)!.spec.versions[0].additionalPrinterColumns!.map((c) => `${c.name}=${c.jsonPath}`);
    expect(cols('VirtualMachine')).toEqual([
      'Age=.metadata.creationTimestamp',
      'Status=.status.printableStatus',
      "Ready=.status.conditions[?(@.type=='Ready')].status",
    ]);
    expect(cols('VirtualMachineInstance').slice(0, 4)).toEqual([
      'Age=.metadata.creationTimestamp',
      'Phase=.status.phase',
      'IP=.status.interfaces[0].ipAddress',
      'NodeName=.status.nodeName',
    ]);
  });
});

describe('CRD schemas are structural', () => {
  for (const c of crds) {
    it(`${c.metadata.name}`, () => {
      for (const v of c.spec.versions) {
        expect(structuralErrors(v.schema.openAPIV3Schema), `${c.metadata.name} ${v.name}`).toEqual([]);
      }
    });
  }

  it('the checker reports each kind of violation with its path', () => {
    expect(
      structuralErrors({
        type: 'object',
        properties: {
          a: { description: 'no type' },
          b: { $ref: '#/definitions/x', type: 'object' },
          c: {
            type: 'object',
            properties: { x: { type: 'string' } },
            additionalProperties: { type: 'string' },
          },
          d: { type: 'string', 'x-kubernetes-int-or-string': true },
          e: { type: 'array', items: { type: 'object' }, 'x-kubernetes-list-type': 'map' },
          f: { type: 'object', anyOf: [{ type: 'string' }] },
          metadata: { type: 'object', properties: { labels: { type: 'object' } } },
        },
      }),
    ).toEqual([
      'openAPIV3Schema.properties.a.type: must not be empty for specified object fields and array items',
      'openAPIV3Schema.properties.b.$ref: forbidden in CRD schemas',
      'openAPIV3Schema.properties.c: additionalProperties and properties are mutually exclusive',
      'openAPIV3Schema.properties.d.type: must be empty with x-kubernetes-int-or-string',
      'openAPIV3Schema.properties.e.x-kubernetes-list-map-keys: required with list-type map',
      'openAPIV3Schema.properties.f.anyOf[0].type: must not be set inside a junctor',
      'openAPIV3Schema.properties.metadata.properties.labels: only name and generateName may be restricted',
    ]);
    expect(structuralErrors({ type: 'string' })).toEqual([
      'openAPIV3Schema.type: the root must be of type object',
    ]);
  });

  it('marks int-or-string, free-form and embedded metadata the way the API server needs', () => {
    const at = (s: CrdSchema, ...keys: string[]) => keys.reduce((n, k) => n.properties![k], s);
    const vmi = crdByName.get('VirtualMachineInstance')!.spec.versions[0].schema.openAPIV3Schema as CrdSchema;
    const memory = at(vmi, 'spec', 'domain', 'memory', 'guest');
    expect(memory).toMatchObject({
      anyOf: [{ type: 'integer' }, { type: 'string' }],
      'x-kubernetes-int-or-string': true,
    });
    expect(memory.type).toBeUndefined();
    expect(at(vmi, 'metadata')).toEqual({ type: 'object' });
    const vm = crdByName.get('VirtualMachine')!.spec.versions[0].schema.openAPIV3Schema as CrdSchema;
    expect(at(vm, 'spec', 'template', 'metadata')).toMatchObject({
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
    expect(at(vm, 'spec').required).toEqual(['template']);
    expect(vm.required).toEqual(['spec']);
  });
});

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const validatorFor = (kind: string, version: string) => {
  const v = crdByName.get(kind)!.spec.versions.find((x) => x.name === version)!;
  return ajv.compile(v.schema.openAPIV3Schema);
};

/** Checks every KubeVirt object of a folder of manifests against its CRD schema. */
function schemaSuite(dir: string, expected: { files: number; objects: number }) {
  const files = fixtureFiles(dir);
  let checked = 0;

  for (const file of files) {
    it(file, () => {
      const docs = parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'));
      for (const d of docs) {
        const obj = d.toJSON() as { apiVersion: string; kind: string } | null;
        if (!obj) continue;
        const found = lookupKind(obj.apiVersion, obj.kind);
        if (!found) continue; // Kubernetes built-ins (PriorityClass, ResourceClaimTemplate)
        const validate = validatorFor(obj.kind, found.version.name);
        const ok = validate(obj);
        expect(ok ? [] : validate.errors, `${file} ${obj.kind}`).toEqual([]);
        checked++;
      }
    });
  }

  it(`checked the ${expected.objects} KubeVirt objects among the manifests`, () => {
    expect(files).toHaveLength(expected.files);
    expect(checked).toBe(expected.objects);
  });
}

describe('CRD schemas accept the fixture manifests (ajv)', () => {
  schemaSuite(fixturesDir, { files: 45, objects: 45 });

  it('rejects a manifest with a wrong type, naming the field', () => {
    const vmi = parse(readFileSync(path.join(fixturesDir, 'vmi-pod-masquerade.yaml'), 'utf8'));
    vmi.spec.domain.devices.disks[0].bootOrder = 'first';
    const validate = validatorFor('VirtualMachineInstance', 'v1');
    expect(validate(vmi)).toBe(false);
    expect(validate.errors?.map((e) => `${e.instancePath} ${e.message}`)).toContain(
      '/spec/domain/devices/disks/0/bootOrder must be integer',
    );
  });
});

describeUpstream('CRD schemas accept the upstream examples (ajv)', (upstream) => {
  schemaSuite(upstream.examplesDir, { files: 47, objects: 44 });
});
