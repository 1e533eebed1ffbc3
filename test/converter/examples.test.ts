/**
 * Done-when check of the converter: every VirtualMachine and VirtualMachineInstance among
 * upstream's 47 examples converts after defaulting, and libvirt accepts each domain:
 * `virt-xml-validate` against the domain schema, then define/undefine on test:///default.
 */
import { describe, expect, it } from 'vitest';
import { convertVMIToXML, decodeDomain, encodeDomain } from '../../src/converter';
import { integration } from '../support/integration';
import { testContext } from './support/contexts';
import { exampleVMIs } from './support/examples';
import {
  checkWithLibvirt,
  defineOnQemu,
  libvirtToolsAvailable,
  qemuDriverAvailable,
} from './support/libvirt';

const examples = exampleVMIs();
const ctx = testContext();
const converted = examples.map((e) => ({ ...e, xml: convertVMIToXML(e.vmi, ctx) }));

describe('upstream examples', () => {
  it('include every VM and VMI manifest, and the pool and replica set templates', () => {
    const count = (kind: string) => examples.filter((e) => e.kind === kind).length;
    expect(count('VirtualMachine')).toBe(12);
    expect(count('VirtualMachineInstance')).toBe(22);
    expect(count('VirtualMachinePool')).toBe(1);
    expect(count('VirtualMachineInstanceReplicaSet')).toBe(1);
  });

  it.each(converted.map((e) => [e.file, e]))('%s converts and round-trips through the XML codec', (_f, e) => {
    expect(e.xml).toContain(`<name>default_${e.vmi.metadata!.name}</name>`);
    expect(encodeDomain(decodeDomain(e.xml))).toBe(e.xml);
  });

  const run = integration(
    'libvirt schema and test driver',
    libvirtToolsAvailable,
    'virt-xml-validate (libvirt-clients, libxml2-utils) or virsh missing',
  );
  it.runIf(run)('libvirt validates and defines every converted example', async () => {
    const verdicts = await checkWithLibvirt(converted.map((e) => ({ name: e.file, xml: e.xml })));
    const failures = [...verdicts]
      .filter(([, v]) => !v.valid || !v.defined)
      .map(([n, v]) => `${n}: ${v.output}`);
    expect(failures).toEqual([]);
    expect(verdicts.size).toBe(36);
  });

  it.runIf(run)('the libvirt checks reject what libvirt rejects (the harness is not vacuous)', async () => {
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
  });

  const runQemu = integration(
    'libvirtd (qemu:///system)',
    qemuDriverAvailable,
    'the system libvirtd does not answer',
  );
  it.runIf(runQemu)('the QEMU driver defines every converted example (type qemu, as under emulation)', () => {
    const emulated = testContext({ kvmAvailable: false, allowEmulation: true });
    const failures = defineOnQemu(
      examples.map((e) => ({ name: e.file, xml: convertVMIToXML(e.vmi, emulated) })),
    );
    expect([...failures]).toEqual([]);
  });
});
