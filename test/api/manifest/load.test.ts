import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadManifestFile, loadManifests, objectsOfKind } from '../../../src/api/manifest';
import { fixtureFiles, fixturesDir, fixtureText } from '../../support/fixtures';
import { describeUpstream } from '../../support/upstream';

/** Loads every manifest of a folder, expecting no error or warning; counts the objects by kind. */
async function loadAll(
  dir: string,
): Promise<{ files: number; counts: Record<string, number>; foreign: number }> {
  const files = fixtureFiles(dir);
  const counts: Record<string, number> = {};
  let foreign = 0;
  for (const f of files) {
    const r = await loadManifestFile(path.join(dir, f));
    expect(
      r.errors.map((e) => e.message),
      f,
    ).toEqual([]);
    expect(
      r.warnings.map((e) => e.message),
      f,
    ).toEqual([]);
    expect(r.objects.length, f).toBeGreaterThan(0);
    for (const o of r.objects) {
      if (o.known) counts[o.kind] = (counts[o.kind] ?? 0) + 1;
      else foreign++;
    }
  }
  return { files: files.length, counts, foreign };
}

describeUpstream('upstream examples', (upstream) => {
  it('all 47 files load with no error or warning, every object accounted for', async () => {
    const { files, counts, foreign } = await loadAll(upstream.examplesDir);
    expect(files).toBe(47);
    expect(counts).toEqual({
      MigrationPolicy: 1,
      VirtualMachine: 12,
      VirtualMachineClusterInstancetype: 1,
      VirtualMachineInstance: 22,
      VirtualMachineInstanceMigration: 1,
      VirtualMachineInstancePreset: 1,
      VirtualMachineInstanceReplicaSet: 1,
      VirtualMachineInstancetype: 2,
      VirtualMachinePool: 1,
      VirtualMachinePreference: 2,
    });
    // Two PriorityClasses and a ResourceClaimTemplate pass through as Kubernetes built-ins.
    expect(foreign).toBe(3);
  });
});

describe('fixture manifests', () => {
  it('every file loads with no error or warning, every object accounted for', async () => {
    const { files, counts, foreign } = await loadAll(fixturesDir);
    expect(files).toBe(45);
    expect(counts).toEqual({
      MigrationPolicy: 1,
      VirtualMachine: 10,
      VirtualMachineClusterInstancetype: 1,
      VirtualMachineInstance: 25,
      VirtualMachineInstanceMigration: 1,
      VirtualMachineInstancePreset: 1,
      VirtualMachineInstanceReplicaSet: 1,
      VirtualMachineInstancetype: 2,
      VirtualMachinePool: 1,
      VirtualMachinePreference: 2,
    });
    // A PriorityClass and a ResourceClaimTemplate pass through as Kubernetes built-ins.
    expect(foreign).toBe(2);
  });

  it('gives typed objects with their source position', async () => {
    const r = await loadManifestFile(path.join(fixturesDir, 'vm-containerdisk.yaml'));
    const [vm] = objectsOfKind(r, 'VirtualMachine');
    expect(vm.spec.runStrategy).toBe('Halted');
    expect(vm.spec.template.spec?.domain.devices.disks?.map((d) => d.name)).toEqual([
      'containerdisk',
      'cloudinitdisk',
    ]);
    expect(vm.spec.template.spec?.domain.memory?.guest).toBe('128Mi');
    expect(r.objects[0].source).toEqual({
      filename: path.join(fixturesDir, 'vm-containerdisk.yaml'),
      document: 1,
      line: 2,
      column: 1,
    });
    expect(r.objects[0].info?.plural).toBe('virtualmachines');
  });
});

describe('formats and documents', () => {
  const vmi = fixtureText('vmi-containerdisk.yaml');

  it('loads multi-document YAML, numbering documents and skipping empty ones', () => {
    const text = `${vmi}---\n# only a comment\n---\n${fixtureText('vm-containerdisk.yaml')}`;
    const r = loadManifests(text, { filename: 'multi.yaml' });
    expect(r.errors).toEqual([]);
    expect(r.objects.map((o) => [o.kind, o.source.document, o.source.line])).toEqual([
      ['VirtualMachineInstance', 1, 2],
      // Document 2 holds only a comment and is skipped; the VM's apiVersion follows its comment line.
      ['VirtualMachine', 3, 27],
    ]);
  });

  it('loads JSON: one object, an array, and a v1 List', () => {
    const obj = loadManifests(vmi, {}).objects[0].object;
    const one = loadManifests(JSON.stringify(obj, null, 2), { filename: 'vmi.json' });
    expect(one.errors).toEqual([]);
    expect(one.objects.map((o) => o.kind)).toEqual(['VirtualMachineInstance']);
    const arr = loadManifests(JSON.stringify([obj, obj]), { filename: 'arr.json' });
    expect(arr.objects).toHaveLength(2);
    const list = loadManifests(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [obj, obj, obj] }));
    expect(list.errors).toEqual([]);
    expect(list.objects.map((o) => o.kind)).toEqual([
      'VirtualMachineInstance',
      'VirtualMachineInstance',
      'VirtualMachineInstance',
    ]);
  });

  it('reports a JSON syntax error with its position', () => {
    const r = loadManifests('{"apiVersion": "kubevirt.io/v1",\n  "kind": }', { filename: 'bad.json' });
    expect(r.objects).toEqual([]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0].message).toBe("bad.json:2:11: document 1: JSON syntax error: Unexpected token '}'");
    const r2 = loadManifests('{"a": 1,\n "b" 2}', { filename: 'bad2.json' });
    expect(r2.errors).toHaveLength(1);
    // V8 words this differently across versions; the position is ours.
    expect(r2.errors[0].message).toMatch(/^bad2\.json:2:6: document 1: JSON syntax error: \w[^\n]*$/);
  });

  it('converts kubevirt.io/v1alpha3 to v1 and says so', () => {
    const r = loadManifests(vmi.replace('kubevirt.io/v1', 'kubevirt.io/v1alpha3'), { filename: 'old.yaml' });
    expect(r.errors).toEqual([]);
    expect(r.objects[0]).toMatchObject({
      kind: 'VirtualMachineInstance',
      apiVersion: 'kubevirt.io/v1',
      originalApiVersion: 'kubevirt.io/v1alpha3',
    });
    expect(r.objects[0].object.apiVersion).toBe('kubevirt.io/v1');
    expect(r.warnings.map((w) => w.message)).toEqual([
      'old.yaml:2:13: document 1 (VirtualMachineInstance/vmi-containerdisk): apiVersion: kubevirt.io/v1alpha3 is deprecated; converted to kubevirt.io/v1 (same schema)',
    ]);
  });
});

describe('unknown fields and wrong types', () => {
  it('warns about an unknown field with its full path and line, keeping it in the object', () => {
    const text = fixtureText('vm-containerdisk.yaml').replace(
      '          disks:\n',
      '          diskz: []\n          disks:\n',
    );
    const r = loadManifests(text, { filename: 'vm.yaml' });
    expect(r.errors).toEqual([]);
    expect(r.warnings).toHaveLength(1);
    expect(r.warnings[0]).toMatchObject({
      code: 'unknown-field',
      path: 'spec.template.spec.domain.devices.diskz',
      line: 21,
      kind: 'VirtualMachine',
      name: 'vm-containerdisk',
    });
    expect(r.warnings[0].message).toBe(
      'vm.yaml:21:18: document 1 (VirtualMachine/vm-containerdisk): spec.template.spec.domain.devices.diskz: unknown field',
    );
    const [vm] = objectsOfKind(r, 'VirtualMachine');
    expect((vm.spec.template.spec!.domain.devices as Record<string, unknown>).diskz).toEqual([]);
  });

  it('reports unknown content inside an empty marker struct such as masquerade: {}', () => {
    const text = fixtureText('vmi-masquerade-ports.yaml').replace(
      'masquerade: {}',
      'masquerade: {portz: [80]}',
    );
    const r = loadManifests(text, { filename: 'vmi.yaml' });
    expect(r.errors).toEqual([]);
    expect(r.warnings.map((w) => w.path)).toEqual(['spec.domain.devices.interfaces[0].masquerade.portz']);
  });

  it('rejects a wrong JSON type naming the field and position, and drops that object', () => {
    const text = fixtureText('vmi-containerdisk.yaml').replace(
      'terminationGracePeriodSeconds: 0',
      'terminationGracePeriodSeconds: soon',
    );
    const r = loadManifests(text, { filename: 'vmi.yaml' });
    expect(r.objects).toEqual([]);
    expect(r.errors.map((e) => e.message)).toEqual([
      'vmi.yaml:9:34: document 1 (VirtualMachineInstance/vmi-containerdisk): spec.terminationGracePeriodSeconds: expected integer, got string "soon"',
    ]);
  });

  it('rejects values outside a swagger enum and missing required fields', () => {
    const text = fixtureText('vmi-containerdisk.yaml')
      .replace(
        '  terminationGracePeriodSeconds: 0',
        '  dnsPolicy: Sometimes\n  terminationGracePeriodSeconds: 0',
      )
      .replace('        - name: containerdisk\n          disk:', '        - disk:');
    const r = loadManifests(text, { filename: 'vmi.yaml' });
    expect(r.errors.map((e) => `${e.path}: ${e.detail}`)).toEqual([
      'spec.dnsPolicy: unsupported value "Sometimes": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"',
      'spec.domain.devices.disks[0].name: required field is missing',
    ]);
  });

  it('hints at YAML 1.1 booleans, which YAML 1.2 reads as strings', () => {
    const text = fixtureText('vm-containerdisk.yaml').replace('runStrategy: Halted', 'running: yes');
    const r = loadManifests(text, { filename: 'vm.yaml' });
    expect(r.errors.map((e) => `${e.path}: ${e.detail}`)).toEqual([
      'spec.running: expected boolean (YAML 1.2 reads yes/no/on/off as strings: write true or false), got string "yes"',
    ]);
  });

  it('resolves YAML merge keys as kubectl does', () => {
    const text = [
      'apiVersion: kubevirt.io/v1',
      'kind: VirtualMachineInstance',
      'metadata: {name: merged}',
      'spec:',
      '  domain:',
      '    devices: {}',
      '    resources: &res',
      '      requests: {memory: 64Mi}',
      '  volumes: []',
      '  evictionStrategy: None',
      '  nodeSelector:',
      '    <<: {a: b}',
      '    c: d',
      '',
    ].join('\n');
    const r = loadManifests(text, { filename: 'merge.yaml' });
    expect(r.errors).toEqual([]);
    const [vmi] = objectsOfKind(r, 'VirtualMachineInstance');
    expect(vmi.spec.nodeSelector).toEqual({ a: 'b', c: 'd' });
  });

  it('names map keys in brackets', () => {
    const text = fixtureText('vmi-containerdisk.yaml').replace('special: vmi-containerdisk', 'special: 7');
    const r = loadManifests(text, { filename: 'vmi.yaml' });
    expect(r.errors.map((e) => `${e.path}: ${e.detail}`)).toEqual([
      'metadata.labels[special]: expected string, got integer 7',
    ]);
  });
});

describe('bad input never throws', () => {
  it('reports malformed YAML with file, line and column', () => {
    const r = loadManifests(
      'apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: [unclosed\n',
      {
        filename: 'broken.yaml',
      },
    );
    expect(r.objects).toEqual([]);
    expect(r.errors.length).toBeGreaterThan(0);
    expect(r.errors[0].code).toBe('syntax');
    expect(r.errors[0].message).toMatch(/^broken\.yaml:\d+:\d+: document 1: YAML syntax error: \S/);
    expect(r.errors[0].message).not.toMatch(/\n|at .*\(/);
  });

  it('reports duplicate keys', () => {
    const r = loadManifests('apiVersion: v1\nkind: ConfigMap\nkind: Secret\n', { filename: 'dup.yaml' });
    expect(r.errors[0].message).toMatch(
      /^dup\.yaml:3:1: document 1: YAML syntax error: Map keys must be unique/,
    );
  });

  it('rejects unknown kinds and unserved versions, naming file, document and apiVersion/kind', () => {
    const r = loadManifests(
      'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\napiVersion: kubevirt.io/v2\nkind: VirtualMachine\n',
      { filename: 'kinds.yaml' },
    );
    expect(r.errors.map((e) => e.message)).toEqual([
      'kinds.yaml:1:1: document 1 (Widget/w): unknown kind "Widget" in apiVersion "example.com/v1": not a KubeVirt kind nor a Kubernetes built-in',
      'kinds.yaml:5:1: document 2 (VirtualMachine): apiVersion "kubevirt.io/v2" is not served for kind VirtualMachine; served: kubevirt.io/v1, kubevirt.io/v1alpha3',
    ]);
  });

  it('rejects documents that are not objects or lack apiVersion/kind', () => {
    const r = loadManifests(
      'just a string\n---\nkind: VirtualMachine\n---\napiVersion: kubevirt.io/v1\nkind: 42\n',
      {
        filename: 'x.yaml',
      },
    );
    expect(r.errors.map((e) => e.message)).toEqual([
      'x.yaml:1:1: document 1: expected a Kubernetes object (a mapping with apiVersion and kind), got string "just a string"',
      'x.yaml:3:1: document 2: apiVersion: missing apiVersion: every object needs apiVersion and kind',
      'x.yaml:6:7: document 3: kind: expected a non-empty string, got integer 42',
    ]);
  });

  it('quotes hostile kinds, names, field names and file names instead of echoing them raw', () => {
    const r = loadManifests(
      stringify({
        apiVersion: 'kubevirt.io/v1',
        kind: 'Virtual\u001b[31mMachine\n',
        metadata: { name: 'a\nb' },
      }),
      { filename: 'evil\n.yaml' },
    );
    expect(r.errors).toHaveLength(1);
    const msg = r.errors[0].message;
    expect([...msg].filter((c) => c.charCodeAt(0) < 0x20)).toEqual([]);
    expect(msg).toContain('"Virtual\\u001b[31mMachine\\n"');
    expect(msg.startsWith('"evil\\n.yaml":')).toBe(true);

    const vmi = fixtureText('vmi-containerdisk.yaml').replace(
      'spec:\n',
      'spec:\n  __proto__: {polluted: true}\n  constructor: 1\n  "we\\u0007ird.key": 2\n',
    );
    const r2 = loadManifests(vmi, { filename: 'vmi.yaml' });
    expect(r2.errors).toEqual([]);
    expect(r2.warnings.map((w) => w.path)).toEqual([
      'spec.__proto__',
      'spec.constructor',
      'spec["we\\u0007ird.key"]',
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('escapes C1 controls, line separators and bidi overrides that JSON quoting leaves raw', () => {
    const r = loadManifests(
      stringify({
        apiVersion: 'kubevirt.io/v1',
        kind: 'Evil\u0085\u2028\u202eKind',
        metadata: { name: 'n' },
      }),
      { filename: 'bidi\u202e.yaml' },
    );
    expect(r.errors.map((e) => e.message)).toEqual([
      '"bidi\\u202e.yaml":1:1: document 1 ("Evil\\u0085\\u2028\\u202eKind"/n): unknown kind "Evil\\u0085\\u2028\\u202eKind" in apiVersion "kubevirt.io/v1": not a KubeVirt kind nor a Kubernetes built-in',
    ]);
  });

  it('refuses alias bombs and oversized input', () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 12; i++)
      bomb.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(', ')}]`,
      );
    const r = loadManifests(`${bomb.join('\n')}\n`, { filename: 'bomb.yaml' });
    expect(r.objects).toEqual([]);
    expect(r.errors[0].message).toMatch(/^bomb\.yaml:\d+:\d+: document 1: cannot decode: .*alias/i);

    const big = loadManifests('x'.repeat(2000), { filename: 'big.yaml', maxBytes: 1000 });
    expect(big.errors.map((e) => e.message)).toEqual([
      'big.yaml: input is 2000 bytes, over the 1000-byte limit',
    ]);
  });

  it('stops reading an endless file at the size limit', async () => {
    const r = await loadManifestFile('/dev/zero', { maxBytes: 4096 });
    expect(r.errors.map((e) => e.message)).toEqual([
      '/dev/zero: input is 4097 bytes, over the 4096-byte limit',
    ]);
  });

  it('reports an unreadable file as an error', async () => {
    const r = await loadManifestFile('/nonexistent/vm.yaml');
    expect(r.errors.map((e) => e.message)).toEqual(['/nonexistent/vm.yaml: cannot read: no such file']);
    const dir = await loadManifestFile(fixturesDir);
    expect(dir.errors.map((e) => e.message)).toEqual([`${fixturesDir}: cannot read: is a directory`]);
  });
});
