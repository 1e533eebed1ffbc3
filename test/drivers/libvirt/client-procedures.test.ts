/**
 * The remaining typed procedures against the real daemon on `test:///default`. Where the
 * test driver implements a call, the decoded result is checked; where it does not, the
 * daemon's "not supported ... virXxx" error proves the procedure number reached the
 * intended API and the arguments decoded (a layout mismatch would be an RPC decode error).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AffectFlags,
  CoreDumpFormat,
  type DomainRef,
  DomainState,
  DumpFlags,
  LibvirtClient,
  LibvirtError,
  MigrateFlags,
  tp,
  VIR_ERR_NO_SUPPORT,
} from '../../../src/drivers/libvirt';
import { integration } from '../../support/integration';
import { systemDaemonReachable, testDomainName } from './support';

const available = await systemDaemonReachable();
const run = integration(
  'libvirtd (test:///default)',
  available,
  'libvirtd socket /var/run/libvirt/libvirt-sock not reachable',
);

async function unsupported(p: Promise<unknown>, api: string): Promise<void> {
  const err = await p.then(
    () => null,
    (e) => e,
  );
  expect(err).toBeInstanceOf(LibvirtError);
  expect(err.code).toBe(VIR_ERR_NO_SUPPORT);
  expect(err.message).toContain(api);
}

describe.skipIf(!run)('typed procedures on test:///default', () => {
  let c: LibvirtClient;
  let dom: DomainRef;
  const name = testDomainName('procs');
  const mac = '52:54:00:6b:76:74';
  beforeAll(async () => {
    c = await LibvirtClient.connect({ uri: 'test:///default' });
    dom = await c.domainCreateXML(`<domain type='test'><name>${name}</name><memory unit='MiB'>32</memory>
  <vcpu current='1'>2</vcpu><os><type>hvm</type></os>
  <devices>
    <disk type='file' device='disk'><source file='/nonexistent/kvts.img'/><target dev='vda' bus='virtio'/></disk>
    <interface type='network'><mac address='${mac}'/><source network='default'/></interface>
  </devices></domain>`);
  });
  afterAll(async () => {
    await c?.domainDestroy(dom).catch(() => {});
    await c?.close();
  });

  it('creates a transient domain from XML and finds it by id', async () => {
    expect(dom.id).toBeGreaterThan(0);
    expect(await c.domainLookupByID(dom.id)).toEqual(dom);
    expect((await c.domainGetState(dom)).state).toBe(DomainState.RUNNING);
  });

  it('reads block and interface counters (the test driver fills them in)', async () => {
    const blk = await c.domainBlockStats(dom, 'vda');
    expect(blk.rdReq).toBeGreaterThan(0);
    expect(blk.wrBytes).toBeGreaterThan(0);
    const net = await c.domainInterfaceStats(dom, mac);
    expect(net.rxBytes).toBeGreaterThan(0);
    expect(net.txPackets).toBeGreaterThan(0);
  });

  it('changes the live vCPU count', async () => {
    await c.domainSetVcpus(dom, 2, AffectFlags.LIVE);
    expect((await c.domainGetInfo(dom)).nrVirtCpu).toBe(2);
  });

  it('reaches the intended API for calls the test driver does not implement', async () => {
    await unsupported(
      c.domainUpdateDevice(dom, "<disk type='file'><target dev='vda'/></disk>"),
      'virDomainUpdateDeviceFlags',
    );
    await unsupported(c.domainGetJobInfo(dom), 'virDomainGetJobInfo');
    await unsupported(
      c.domainSetLaunchSecurityState(dom, [
        tp.string('sev-secret', 'AAAA'),
        tp.string('sev-secret-header', 'BBBB'),
      ]),
      'virDomainSetLaunchSecurityState',
    );
    await unsupported(
      c.domainMigrateToURI3(
        dom,
        'test:///default',
        [tp.string('destination_name', 'x')],
        MigrateFlags.PEER2PEER,
      ),
      'virDomainMigratePerform3Params',
    );
    await unsupported(c.qemuAgentCommand(dom, '{"execute":"guest-ping"}'), 'virDomainQemuAgentCommand');
    await unsupported(c.qemuMonitorCommand(dom, '{"execute":"query-status"}'), 'virDomainQemuMonitorCommand');
  });

  it('dumps the core through virDomainCoreDumpWithFormat (the test driver writes its own magic)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvts-coredump-'));
    try {
      const file = join(dir, 'core.dump');
      // The test driver takes only VIR_DUMP_CRASH: MEMORY_ONLY reaching it proves the flags' slot.
      const err = await c
        .domainCoreDumpWithFormat(dom, file, CoreDumpFormat.RAW, DumpFlags.MEMORY_ONLY)
        .catch((e) => e);
      expect(err).toBeInstanceOf(LibvirtError);
      expect(err.message).toMatch(/unsupported flags \(0x10\) in function testDomainCoreDumpWithFormat/);
      await c.domainCoreDumpWithFormat(dom, file, CoreDumpFormat.RAW, 0);
      expect(readFileSync(file).subarray(0, 14).toString('latin1')).toBe('TestGuestMagic');
      expect((await c.domainGetState(dom)).state).toBe(DomainState.RUNNING);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses non-peer-to-peer migration before calling the daemon', async () => {
    const err = await c.domainMigrateToURI3(dom, 'test:///default', [], MigrateFlags.LIVE).catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.message).toMatch(/PEER2PEER/);
  });

  it('shuts the domain down; a transient domain then disappears', async () => {
    await c.domainShutdown(dom);
    const err = await c.domainLookupByName(name).catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.code).toBe(42);
  });
});
