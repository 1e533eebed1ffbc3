import { describe, expect, it } from 'vitest';
import {
  type Domain,
  DomainXMLError,
  decodeDomain,
  domainSpec,
  encodeDomain,
} from '../../../src/converter/domain';
import type { ElementSpec } from '../../../src/converter/domain/schema';

/** A domain that exercises every kind of node in the shape table at least once. */
function fullDomain(): Domain {
  return {
    type: 'kvm',
    name: 'default_vm',
    uuid: '5d307ca9-b3ef-428c-8861-06e72d69f223',
    metadata: {
      kubevirt: { xmlns: 'http://kubevirt.io', uid: 'u1', graceperiod: { deletionGracePeriodSeconds: 30 } },
    },
    maxMemory: { unit: 'KiB', slots: 16, value: 4194304 },
    memory: { unit: 'KiB', value: 1048576 },
    currentMemory: { unit: 'KiB', value: 1048576 },
    memoryBacking: {
      hugepages: { page: [{ size: 2, unit: 'M' }] },
      source: { type: 'memfd' },
      access: { mode: 'shared' },
    },
    vcpu: { placement: 'static', value: 4 },
    iothreads: 2,
    cputune: {
      vcpupin: [{ vcpu: 0, cpuset: '2' }],
      emulatorpin: { cpuset: '3' },
      iothreadpin: [{ iothread: 1, cpuset: '3' }],
    },
    numatune: {
      memory: { mode: 'strict', nodeset: '0' },
      memnode: [{ cellid: 0, mode: 'strict', nodeset: '0' }],
    },
    sysinfo: {
      type: 'smbios',
      system: { entry: [{ name: 'manufacturer', value: 'KubeVirt' }, { name: 'serial' }] },
    },
    os: {
      type: { arch: 'x86_64', machine: 'q35', value: 'hvm' },
      loader: {
        readonly: 'yes',
        secure: 'yes',
        type: 'pflash',
        value: '/usr/share/OVMF/OVMF_CODE_4M.secboot.fd',
      },
      nvram: { template: '/usr/share/OVMF/OVMF_VARS_4M.ms.fd', value: '/var/run/vm_VARS.fd' },
      kernel: '/k',
      initrd: '/i',
      cmdline: 'console=ttyS0',
      boot: [{ dev: 'hd' }],
      bootmenu: { enable: 'yes', timeout: 1000 },
      smbios: { mode: 'sysinfo' },
    },
    features: {
      acpi: {},
      apic: {},
      hyperv: {
        relaxed: { state: 'on' },
        spinlocks: { state: 'on', retries: 8191 },
        vendor_id: { state: 'on', value: 'x' },
      },
      kvm: { hidden: { state: 'on' } },
      smm: { state: 'on' },
    },
    cpu: {
      mode: 'host-model',
      model: { fallback: 'allow', value: 'Skylake' },
      topology: { sockets: 1, cores: 2, threads: 2 },
      feature: [{ policy: 'require', name: 'vmx' }],
      numa: { cell: [{ id: 0, cpus: '0-3', memory: 1048576, unit: 'KiB' }] },
    },
    clock: {
      offset: 'utc',
      timer: [
        { name: 'rtc', tickpolicy: 'catchup' },
        { name: 'hpet', present: 'no' },
      ],
    },
    on_poweroff: 'destroy',
    on_reboot: 'restart',
    on_crash: 'destroy',
    devices: {
      emulator: '/usr/bin/qemu-system-x86_64',
      disk: [
        {
          type: 'file',
          device: 'disk',
          driver: { name: 'qemu', type: 'qcow2', cache: 'none', error_policy: 'stop', discard: 'unmap' },
          source: { file: '/a.qcow2' },
          backingStore: { type: 'file', format: { type: 'raw' }, source: { file: '/b.img' } },
          target: { dev: 'vda', bus: 'virtio' },
          serial: 'S1',
          boot: { order: 1 },
          readonly: {},
          alias: { name: 'ua-d' },
          address: { type: 'pci', domain: '0x0000', bus: '0x01', slot: '0x00', function: '0x0' },
        },
      ],
      controller: [{ type: 'usb', index: 0, model: 'qemu-xhci' }],
      interface: [
        {
          type: 'ethernet',
          mac: { address: '02:00:00:00:00:01' },
          target: { dev: 'tap0', managed: 'no' },
          model: { type: 'virtio-non-transitional' },
        },
      ],
      serial: [
        {
          type: 'unix',
          source: { mode: 'bind', path: '/s' },
          target: { port: 0 },
          log: { file: '/l', append: 'on' },
        },
      ],
      console: [{ type: 'pty', target: { type: 'serial', port: 0 } }],
      channel: [
        {
          type: 'unix',
          source: { mode: 'bind' },
          target: { type: 'virtio', name: 'org.qemu.guest_agent.0' },
        },
      ],
      input: [{ type: 'tablet', bus: 'usb' }],
      tpm: [{ model: 'tpm-crb', backend: { type: 'emulator', version: '2.0', persistent_state: 'yes' } }],
      graphics: [{ type: 'vnc', socket: '/v' }],
      video: [{ model: { type: 'vga', heads: 1, vram: 16384 } }],
      hostdev: [
        {
          mode: 'subsystem',
          type: 'pci',
          managed: 'no',
          source: { address: { type: 'pci', domain: '0x0000', bus: '0x81', slot: '0x00', function: '0x1' } },
        },
      ],
      redirdev: [{ bus: 'usb', type: 'unix', source: { mode: 'bind', path: '/r' } }],
      watchdog: [{ model: 'i6300esb', action: 'reset' }],
      memballoon: { model: 'virtio-non-transitional', freePageReporting: 'on', stats: { period: 10 } },
      rng: [{ model: 'virtio', backend: { model: 'random', value: '/dev/urandom' } }],
      panic: [{ model: 'isa' }],
      vsock: { model: 'virtio', cid: { auto: 'no', address: 3 } },
      filesystem: [
        {
          type: 'mount',
          accessmode: 'passthrough',
          driver: { type: 'virtiofs' },
          source: { socket: '/fs' },
          target: { dir: 'fs' },
        },
      ],
      sound: [{ model: 'ich9' }],
    },
    launchSecurity: { type: 'sev-snp', policy: '0x00030000', cbitpos: 51, reducedPhysBits: 1 },
  };
}

describe('domain XML codec', () => {
  it('round-trips a domain using every element kind', () => {
    const d = fullDomain();
    const xml = encodeDomain(d);
    expect(decodeDomain(xml)).toEqual(d);
    expect(xml).toContain('<smm state="on"/>');
    expect(xml).toContain('<acpi/>');
    expect(xml).toContain('<memory unit="KiB">1048576</memory>');
  });

  it('escapes markup characters in text and attributes so they cannot inject elements', () => {
    const evil = `x</name><devices><disk type='block'/></devices>&amp;"'`;
    const d = fullDomain();
    d.name = evil;
    d.devices.disk![0].source = { file: `/p"/><source file="/etc/shadow` };
    const xml = encodeDomain(d);
    expect(xml).not.toContain("<disk type='block'/>");
    expect(xml).toContain('&lt;/name&gt;');
    const back = decodeDomain(xml);
    expect(back.name).toBe(evil);
    expect(back.devices.disk![0].source!.file).toBe(`/p"/><source file="/etc/shadow`);
    expect(back.devices.disk).toHaveLength(1);
  });

  it('rejects control characters with the model path', () => {
    const d = fullDomain();
    d.devices.disk![0].serial = 'a\u0001b';
    expect(() => encodeDomain(d)).toThrow(
      new DomainXMLError(
        'domain.devices.disk[0].serial',
        'contains a control character that XML cannot carry',
      ),
    );
  });

  it('rejects line breaks in attributes, which XML would fold into spaces', () => {
    const d = fullDomain();
    d.devices.disk![0].source = { file: '/a\nb' };
    expect(() => encodeDomain(d)).toThrow(/domain\.devices\.disk\[0\]\.source\.file: contains a line break/);
  });

  it('rejects a non-numeric value where the schema wants a number', () => {
    const d = fullDomain();
    (d.memory as { value: unknown }).value = '12';
    expect(() => encodeDomain(d)).toThrow(/domain\.memory\.value: expected a finite number/);
    expect(() =>
      decodeDomain('<domain type="kvm"><name>a</name><memory unit="KiB">lots</memory></domain>'),
    ).toThrow(/domain\.memory\.value: expected a number/);
  });

  it('ignores elements and attributes the model does not know, as a live domain XML has them', () => {
    const xml = `<domain type='kvm' id='3'><name>n</name><memory unit='KiB'>1024</memory><resource><partition>/machine</partition></resource>
      <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os><devices><disk type='file' device='disk'><target dev='vda' bus='virtio'/><alias name='ua-d'/></disk></devices><seclabel type='none'/></domain>`;
    const d = decodeDomain(xml);
    expect(d.name).toBe('n');
    expect(d.os.type).toEqual({ arch: 'x86_64', machine: 'pc-q35-7.2', value: 'hvm' });
    expect(d.devices.disk).toEqual([
      { type: 'file', device: 'disk', target: { dev: 'vda', bus: 'virtio' }, alias: { name: 'ua-d' } },
    ]);
  });

  it('has no element whose text key collides with an attribute or child', () => {
    const seen: string[] = [];
    const walk = (spec: ElementSpec, path: string) => {
      const keys = [...spec.attrs.map(([n]) => n), ...spec.children.map((c) => c.tag)];
      if (spec.text) keys.push('value');
      expect(new Set(keys).size, path).toBe(keys.length);
      seen.push(path);
      for (const c of spec.children) if (typeof c.spec !== 'string') walk(c.spec, `${path}.${c.tag}`);
    };
    walk(domainSpec, 'domain');
    expect(seen.length).toBeGreaterThan(60);
  });
});
