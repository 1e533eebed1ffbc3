/**
 * The passt binding without libvirt's passt backend (`passtBackend: 'qemu'`): the launcher
 * starts passt itself (virt-launcher/passt-process.ts) and the domain attaches QEMU to its
 * socket with the same netdev libvirt would use for `<backend type="passt"/>`
 * (qemu_passt.c: a `stream` netdev, `addr.type=unix`, `server=off`), passed through
 * libvirt's `<qemu:commandline>`, both in QEMU's JSON syntax (JSON-escaped):
 *
 *   -netdev {"type":"stream","id":"netua-<name>","server":false,"addr":{"type":"unix","path":"<privateDir>/<uid>/passt.sock"}}
 *   -device {"driver":"virtio-net-pci-non-transitional","netdev":"netua-<name>","id":"ua-<name>","mac":"<mac>","romfile":""}
 *
 * JSON for the device too, not `key=value`: QEMU 7.2 creates every `key=value` `-device`
 * before the JSON ones libvirt writes, so a `key=value` NIC would take the PCI slot
 * libvirt gave its first root port (QEMU then refuses to start).
 *
 * What libvirt would add to the device from `<interface>` children and QEMU cannot get this
 * way (a guest PCI address, an ACPI index, link state down, several queues) is refused
 * with its field path rather than dropped.
 */
import type { Interface as VMIInterface } from '../../api/generated/types';
import type { Conversion } from '../conversion';
import { QEMU_NAMESPACE } from '../domain/types';
import { passtSocketPath } from '../passt';

/** libvirt's interface models as QEMU device names (QEMU 7.2). */
const DEVICES: Record<string, string> = {
  'virtio-non-transitional': 'virtio-net-pci-non-transitional',
  'virtio-transitional': 'virtio-net-pci-transitional',
  virtio: 'virtio-net-pci',
  e1000: 'e1000',
  e1000e: 'e1000e',
  igb: 'igb',
  ne2k_pci: 'ne2k_pci',
  pcnet: 'pcnet',
  rtl8139: 'rtl8139',
};

/** QEMU's id syntax (id_wellformed): a letter, then letters, digits, `-`, `.`, `_`. */
const QEMU_ID = /^[A-Za-z][A-Za-z0-9._-]{0,127}$/;
const MAC = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/;

/** A string for QEMU's arguments: control characters are refused (JSON would carry them). */
export function qemuString(value: string, path: string, fail: (p: string, m: string) => never): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(value)) fail(path, 'contains a control character');
  return value;
}

/**
 * Appends the netdev and device of the passtBinding interface `iface` (at `path`) to the
 * domain's `<qemu:commandline>`. `model` is libvirt's model name, `mac` the normalised MAC
 * (lower case, colons) or undefined for QEMU's own.
 */
export function addPasstQemuArgs(
  c: Conversion,
  iface: VMIInterface,
  path: string,
  model: string,
  mac: string | undefined,
): void {
  const fail = (p: string, m: string): never => c.fail(p, m);
  const why = 'is not supported when QEMU reaches passt directly (this libvirt has no passt backend)';
  if (iface.pciAddress) fail(`${path}.pciAddress`, why);
  if (iface.acpiIndex !== undefined) fail(`${path}.acpiIndex`, why);
  if (iface.state === 'down') fail(`${path}.state`, `'down' ${why}`);
  if (c.spec.domain.devices.networkInterfaceMultiqueue && c.vcpus > 1)
    fail('spec.domain.devices.networkInterfaceMultiqueue', `with more than one vCPU ${why}`);
  const device = DEVICES[model];
  if (!device) fail(`${path}.model`, `'${c.line(model, `${path}.model`)}' ${why}`);
  const id = `ua-${iface.name}`;
  if (!QEMU_ID.test(id))
    fail(`${path}.name`, `'${c.line(iface.name, `${path}.name`)}' cannot name a QEMU device`);
  if (mac !== undefined && !MAC.test(mac))
    fail(`${path}.macAddress`, `'${c.line(mac, `${path}.macAddress`)}' is not a MAC address`);
  const existing = c.domain['qemu:commandline']?.['qemu:arg'] ?? [];
  if (existing.some((a) => a.value.startsWith('{"type":"stream","id":"netua-')))
    fail(`${path}.passtBinding`, 'only one interface may use the passt binding');
  const socket = qemuString(passtSocketPath(c.privateDir), 'converter context paths.privateDir', fail);
  const netdev = { type: 'stream', id: `net${id}`, server: false, addr: { type: 'unix', path: socket } };
  const dev: Record<string, string | number | boolean> = { driver: device, netdev: `net${id}`, id };
  if (mac) dev.mac = mac;
  if (c.iommu && device.startsWith('virtio')) dev.iommu_platform = true;
  if (iface.bootOrder !== undefined) {
    if (!Number.isInteger(iface.bootOrder) || iface.bootOrder < 1)
      fail(`${path}.bootOrder`, `${JSON.stringify(iface.bootOrder)} is not a boot order (1 or more)`);
    dev.bootindex = iface.bootOrder;
  }
  // No option ROM unless the NIC boots (avoids iPXE), and never under SEV/SNP: as the
  // `<rom enabled="no"/>` of the libvirt path.
  if (iface.bootOrder === undefined || c.iommu) dev.romfile = '';
  c.domain['xmlns:qemu'] = QEMU_NAMESPACE;
  c.domain['qemu:commandline'] = {
    'qemu:arg': [
      ...existing,
      { value: '-netdev' },
      { value: JSON.stringify(netdev) },
      { value: '-device' },
      { value: JSON.stringify(dev) },
    ],
  };
}
