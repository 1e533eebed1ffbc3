/**
 * The XML a migration sends: the source's live migratable definition, untouched except
 * for host paths, which take the target pod's values from the domain the target
 * rendered (matched by position: kernel, disks, serial/console/channel and the serial
 * log, graphics).
 */
import { describe, expect, it } from 'vitest';
import { domainPaths, migratableXmlForTarget } from '../../../src/drivers/libvirt-driver/migratable-xml';

const live = `<domain type='qemu' id='3'>
  <name>ns_vm</name>
  <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type><kernel>/pods/src/images/vmlinuz</kernel></os>
  <cpu mode='custom' match='exact'><model fallback='forbid'>qemu64</model></cpu>
  <devices>
    <disk type='file' device='disk'><source file='/pods/src/disks/it&apos;s.qcow2'/><target dev='vda'/>
      <address type='pci' domain='0x0000' bus='0x04' slot='0x00' function='0x0'/></disk>
    <serial type='unix'><source mode='bind' path='/pods/src/private/virt-serial0'/><log file='/pods/src/private/virt-serial0-log' append='on'/></serial>
    <console type='unix'><source mode='bind' path='/pods/src/private/virt-serial0'/></console>
    <channel type='unix'><source mode='bind' path='/var/lib/libvirt/qemu/channel/target/auto.sock'/></channel>
    <graphics type='vnc' socket='/pods/src/private/virt-vnc'><listen type='socket' socket='/pods/src/private/virt-vnc'/></graphics>
  </devices>
</domain>`;

const prepared = `<domain type="qemu">
  <name>ns_vm</name>
  <os><type arch="x86_64" machine="q35">hvm</type><kernel>/pods/dst/images/vmlinuz</kernel></os>
  <cpu mode="host-model"/>
  <devices>
    <disk type="file" device="disk"><source file="/pods/dst/disks/it's.qcow2"/><target dev="vda"/></disk>
    <serial type="unix"><source mode="bind" path="/pods/dst/private/virt-serial0"/><log file="/pods/dst/private/virt-serial0-log" append="on"/></serial>
    <console type="unix"><source mode="bind" path="/pods/dst/private/virt-serial0"/></console>
    <channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"/></channel>
    <graphics type="vnc"><listen type="socket" socket="/pods/dst/private/virt-vnc"/></graphics>
  </devices>
</domain>`;

describe('migratableXmlForTarget', () => {
  it('keeps the live definition and swaps in the target paths', () => {
    const out = migratableXmlForTarget(live, prepared);
    expect(out).toBe(
      live
        .replace('/pods/src/images/vmlinuz', '/pods/dst/images/vmlinuz')
        .replace('/pods/src/disks/it&apos;s.qcow2', '/pods/dst/disks/it&apos;s.qcow2')
        .replace('/pods/src/private/virt-serial0-log', '/pods/dst/private/virt-serial0-log')
        .replaceAll('/pods/src/private/virt-serial0', '/pods/dst/private/virt-serial0')
        .replaceAll('/pods/src/private/virt-vnc', '/pods/dst/private/virt-vnc'),
    );
    // The guest ABI stays the running guest's: expanded CPU, device addresses.
    expect(out).toContain("<cpu mode='custom' match='exact'>");
    expect(out).toContain("bus='0x04'");
    // A path only the live domain has (libvirt's own channel socket) is left alone.
    expect(out).toContain('/var/lib/libvirt/qemu/channel/target/auto.sock');
    expect(out).not.toContain('/pods/src/');
  });

  it('lists the paths of a document by position', () => {
    expect(Object.fromEntries(domainPaths(prepared))).toEqual({
      'os.kernel': '/pods/dst/images/vmlinuz',
      'disk[0].file': "/pods/dst/disks/it's.qcow2",
      'serial[0].path': '/pods/dst/private/virt-serial0',
      'serial[0].log': '/pods/dst/private/virt-serial0-log',
      'console[0].path': '/pods/dst/private/virt-serial0',
      'graphics[0].listen[0].socket': '/pods/dst/private/virt-vnc',
    });
  });

  it('refuses a cookie that is not a domain', () => {
    expect(() => migratableXmlForTarget(live, '{"fakeDomain":"x"}')).toThrow('not a <domain> document');
  });
});
