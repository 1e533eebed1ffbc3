/**
 * Done-when check of the converter: every VirtualMachine and VirtualMachineInstance among
 * the project's fixtures (and, where present, upstream's 47 examples) converts after
 * defaulting, and libvirt accepts each domain: `virt-xml-validate` against the domain
 * schema, then define/undefine on test:///default.
 */
import { describe, expect, it } from 'vitest';
import { convertVMIToXML, decodeDomain, encodeDomain } from '../../src/converter';
import { integration } from '../support/integration';
import { describeUpstream } from '../support/upstream';
import { testContext } from './support/contexts';
import { manifestVMIs } from './support/examples';
import {
  checkWithLibvirt,
  defineOnQemu,
  libvirtToolsAvailable,
  qemuDriverAvailable,
} from './support/libvirt';

const ctx = testContext();

const runLibvirt = integration(
  'libvirt schema and test driver',
  libvirtToolsAvailable,
  'virt-xml-validate (libvirt-clients, libxml2-utils) or virsh missing',
);
const runQemu = integration(
  'libvirtd (qemu:///system)',
  qemuDriverAvailable,
  'the system libvirtd does not answer',
);

interface Expected {
  VirtualMachine: number;
  VirtualMachineInstance: number;
  VirtualMachinePool: number;
  VirtualMachineInstanceReplicaSet: number;
}

/** Converts every VM/VMI of a folder and has libvirt check each domain. */
function conversionSuite(dir: string | undefined, expected: Expected) {
  const examples = manifestVMIs(dir);
  const converted = examples.map((e) => ({ ...e, xml: convertVMIToXML(e.vmi, ctx) }));

  it('include every VM and VMI manifest, and the pool and replica set templates', () => {
    const count = (kind: string) => examples.filter((e) => e.kind === kind).length;
    expect({
      VirtualMachine: count('VirtualMachine'),
      VirtualMachineInstance: count('VirtualMachineInstance'),
      VirtualMachinePool: count('VirtualMachinePool'),
      VirtualMachineInstanceReplicaSet: count('VirtualMachineInstanceReplicaSet'),
    }).toEqual(expected);
  });

  it.each(converted.map((e) => [e.file, e]))('%s converts and round-trips through the XML codec', (_f, e) => {
    expect(e.xml).toContain(`<name>default_${e.vmi.metadata!.name}</name>`);
    expect(encodeDomain(decodeDomain(e.xml))).toBe(e.xml);
  });

  it.runIf(runLibvirt)('libvirt validates and defines every converted manifest', async () => {
    const verdicts = await checkWithLibvirt(converted.map((e) => ({ name: e.file, xml: e.xml })));
    const failures = [...verdicts]
      .filter(([, v]) => !v.valid || !v.defined)
      .map(([n, v]) => `${n}: ${v.output}`);
    expect(failures).toEqual([]);
    expect(verdicts.size).toBe(new Set(converted.map((e) => e.file)).size);
  });

  it.runIf(runQemu)(
    'the QEMU driver defines every converted manifest (type qemu, as under emulation)',
    () => {
      const emulated = testContext({ kvmAvailable: false, allowEmulation: true });
      const failures = defineOnQemu(
        examples.map((e) => ({ name: e.file, xml: convertVMIToXML(e.vmi, emulated) })),
      );
      expect([...failures]).toEqual([]);
    },
  );

  return converted;
}

describe('fixture manifests', () => {
  const converted = conversionSuite(undefined, {
    VirtualMachine: 10,
    VirtualMachineInstance: 25,
    VirtualMachinePool: 1,
    VirtualMachineInstanceReplicaSet: 1,
  });

  it.runIf(runLibvirt)(
    'the libvirt checks reject what libvirt rejects (the harness is not vacuous)',
    async () => {
      const good = converted[0].xml;
      const verdicts = await checkWithLibvirt([
        { name: 'unknown-element', xml: good.replace('<devices>', '<devices>\n    <bogus/>') },
        { name: 'no-os-type', xml: good.replace(/<os>[\s\S]*<\/os>/, '') },
      ]);
      expect(verdicts.get('unknown-element')).toMatchObject({ valid: false });
      // The schema allows a domain without <os>; libvirt's parser does not.
      expect(verdicts.get('no-os-type')).toMatchObject({ valid: true, defined: false });
      if (qemuDriverAvailable) {
        const bad = good.replace(
          '<controller type="usb" index="0" model="none"/>',
          '<controller type="usb" index="0" model="no-such-model"/>',
        );
        expect(defineOnQemu([{ name: 'bad-model', xml: bad }]).has('bad-model')).toBe(true);
      }
    },
  );
});

describeUpstream('upstream examples', (upstream) => {
  conversionSuite(upstream.examplesDir, {
    VirtualMachine: 12,
    VirtualMachineInstance: 22,
    VirtualMachinePool: 1,
    VirtualMachineInstanceReplicaSet: 1,
  });
});
