/**
 * The passt binding where libvirt has no passt backend (`passtBackend: 'qemu'`): no
 * `<interface>`, QEMU's stream netdev on the launcher's passt socket and the NIC through
 * `<qemu:commandline>`, accepted by libvirt's schema (virt-xml-validate) and by libvirt's
 * parser (test driver); what QEMU cannot be given this way is refused with its path, and
 * path strings reaching QEMU's JSON arguments are escaped.
 */
import { describe, expect, it } from 'vitest';
import { convertVMI, decodeDomain, defaultConverterContext, encodeDomain } from '../../../src/converter';
import { interfacesConfigurator } from '../../../src/converter/configurators';
import { qemuString } from '../../../src/converter/configurators/passt-qemu';
import { passtPortArgs, passtPorts, passtSocketPath } from '../../../src/converter/passt';
import { integration } from '../../support/integration';
import { testContext } from '../support/contexts';
import { checkWithLibvirt, libvirtToolsAvailable } from '../support/libvirt';

const libvirtTools = integration(
  'virt-xml-validate and virsh',
  libvirtToolsAvailable,
  'install libvirt-clients and libxml2-utils (scripts/setup-host.sh)',
);

import { run, vmi } from '../support/run';

const pod = { name: 'default', pod: {} };
const uid = '31111111-2222-4333-8444-555555555555';
const fallback = (privateDir = '/run/kvts-private') =>
  testContext({ passtBackend: 'qemu', paths: { ...testContext().paths, privateDir } });

function passtVmi(iface: object = {}, extra: object = {}) {
  return vmi(
    {
      networks: [pod],
      domain: {
        devices: {
          interfaces: [{ name: 'default', passtBinding: {}, macAddress: '02:00:00:AA:BB:CC', ...iface }],
        },
      },
      ...extra,
    } as never,
    { uid },
  );
}

describe('passt binding through QEMU arguments (no passt backend in libvirt)', () => {
  it('renders the stream netdev on the launcher socket and the NIC, and no <interface>', () => {
    const d = run([interfacesConfigurator], passtVmi({ ports: [{ port: 8080 }] }), fallback());
    expect(d.devices.interface).toBeUndefined();
    expect(d['xmlns:qemu']).toBe('http://libvirt.org/schemas/domain/qemu/1.0');
    expect(d['qemu:commandline']?.['qemu:arg'].map((a) => a.value)).toEqual([
      '-netdev',
      `{"type":"stream","id":"netua-default","server":false,"addr":{"type":"unix","path":"/run/kvts-private/${uid}/passt.sock"}}`,
      '-device',
      '{"driver":"virtio-net-pci-non-transitional","netdev":"netua-default","id":"ua-default","mac":"02:00:00:aa:bb:cc","romfile":""}',
    ]);
    // The default context keeps libvirt's backend.
    expect(run([interfacesConfigurator], passtVmi()).devices.interface?.[0].backend).toEqual({
      type: 'passt',
    });
    expect(defaultConverterContext().passtBackend).toBe('libvirt');
  });

  it('boots from the NIC with bootindex and its ROM; transitional virtio and e1000 by QEMU name', () => {
    const device = (iface: object, extra: object = {}) =>
      JSON.parse(
        run([interfacesConfigurator], passtVmi(iface, extra), fallback())['qemu:commandline']?.['qemu:arg'][3]
          .value ?? '',
      );
    const nic = { netdev: 'netua-default', id: 'ua-default', mac: '02:00:00:aa:bb:cc' };
    expect(device({ bootOrder: 2 })).toEqual({
      driver: 'virtio-net-pci-non-transitional',
      ...nic,
      bootindex: 2,
    });
    expect(device({ model: 'e1000' })).toEqual({ driver: 'e1000', ...nic, romfile: '' });
    expect(
      device(
        {},
        {
          domain: {
            devices: { useVirtioTransitional: true, interfaces: [{ name: 'default', passtBinding: {} }] },
          },
        },
      ),
    ).toEqual({
      driver: 'virtio-net-pci-transitional',
      netdev: 'netua-default',
      id: 'ua-default',
      romfile: '',
    });
  });

  it('refuses what QEMU cannot be given this way, naming the field', () => {
    const fails =
      (iface: object, extra: object = {}) =>
      () =>
        run([interfacesConfigurator], passtVmi(iface, extra), fallback());
    const why = 'is not supported when QEMU reaches passt directly (this libvirt has no passt backend)';
    expect(fails({ pciAddress: '0000:81:01.0' })).toThrow(
      `spec.domain.devices.interfaces[0].pciAddress: ${why}`,
    );
    expect(fails({ acpiIndex: 3 })).toThrow(`spec.domain.devices.interfaces[0].acpiIndex: ${why}`);
    expect(fails({ state: 'down' })).toThrow(`spec.domain.devices.interfaces[0].state: 'down' ${why}`);
    expect(fails({ state: 'sideways' })).toThrow(
      "interfaces[0].state: 'sideways' is not one of up, down, absent",
    );
    expect(fails({ ports: [{ port: 7, protocol: 'SCTP' }] })).toThrow(
      'spec.domain.devices.interfaces[0].ports[0].protocol: passt forwards TCP and UDP only',
    );
    expect(fails({ ports: [{ port: 70000 }] })).toThrow(
      'interfaces[0].ports[0].port: 70000 is not a port number',
    );
    expect(fails({ macAddress: '02:00:00:00:00:0,' })).toThrow(
      "spec.domain.devices.interfaces[0].macAddress: '02:00:00:00:00:0,' is not a MAC address",
    );
    expect(
      fails(
        {},
        {
          domain: {
            cpu: { cores: 2 },
            devices: {
              networkInterfaceMultiqueue: true,
              interfaces: [{ name: 'default', passtBinding: {} }],
            },
          },
        },
      ),
    ).toThrow(`spec.domain.devices.networkInterfaceMultiqueue: with more than one vCPU ${why}`);
  });

  it("escapes a path's quotes and backslashes as JSON and XML's specials, and refuses control characters", () => {
    const dir = `/run/a,b&c'd"e\\f`;
    const d = run([interfacesConfigurator], passtVmi(), fallback(dir));
    const netdev = d['qemu:commandline']?.['qemu:arg'][1].value ?? '';
    expect(netdev).toContain(`"path":"/run/a,b&c'd\\"e\\\\f/${uid}/passt.sock"`);
    expect(JSON.parse(netdev).addr.path).toBe(`${dir}/${uid}/passt.sock`);
    const xml = encodeDomain({
      ...d,
      name: 'x',
      type: 'qemu',
      memory: { value: 1 },
      os: { type: { value: 'hvm' } },
    } as never);
    expect(xml).toContain(`&quot;path&quot;:&quot;/run/a,b&amp;c&apos;d\\&quot;e`);
    expect(decodeDomain(xml)['qemu:commandline']).toEqual(d['qemu:commandline']);
    expect(() =>
      qemuString('/run/x\ny', 'p', (p, m) => {
        throw new Error(`${p}: ${m}`);
      }),
    ).toThrow('p: contains a control character');
    expect(() => run([interfacesConfigurator], passtVmi(), fallback('/run/x\u0001y'))).toThrow(
      'converter context paths.privateDir: contains a control character',
    );
  });

  it("builds passt's port arguments as libvirt does: the declared ports, else all of both", () => {
    const fail = (p: string, m: string): never => {
      throw new Error(`${p}: ${m}`);
    };
    const ports = (p?: object[]) =>
      passtPortArgs(passtPorts({ name: 'default', ports: p } as never, 'i', fail));
    expect(ports()).toEqual(['--tcp-ports', 'all', '--udp-ports', 'all']);
    expect(ports([{ port: 8080 }, { port: 22, protocol: 'tcp' }])).toEqual(['--tcp-ports', '8080,22']);
    expect(ports([{ port: 53, protocol: 'UDP' }, { port: 80 }])).toEqual([
      '--tcp-ports',
      '80',
      '--udp-ports',
      '53',
    ]);
    expect(passtSocketPath('/p/u')).toBe('/p/u/passt.sock');
  });

  it.skipIf(!libvirtTools)('is accepted by virt-xml-validate and libvirt’s parser', async () => {
    const ctx = fallback();
    const xml = encodeDomain(
      convertVMI(passtVmi({ ports: [{ port: 8080 }] }), {
        ...ctx,
        kvmAvailable: false,
        allowEmulation: true,
      }),
    );
    expect(xml).toContain('<domain type="qemu" xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0">');
    expect(xml).toMatch(/<qemu:commandline>\s*<qemu:arg value="-netdev"\/>/);
    const verdict = (await checkWithLibvirt([{ name: 'passt-qemu', xml }])).get('passt-qemu');
    expect(verdict).toEqual({ valid: true, defined: true, output: '' });
  });
});
