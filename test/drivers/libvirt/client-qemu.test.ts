/**
 * LibvirtClient against the real libvirtd and QEMU (`qemu:///system`): capabilities and
 * domain capabilities, and the whole life of a tiny diskless TCG domain (define, start,
 * suspend, resume, reset, QMP command, stats, destroy, undefine) with its lifecycle events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AffectFlags,
  CreateFlags,
  DomainState,
  DomainXMLFlags,
  type EventStream,
  LibvirtClient,
  LibvirtError,
  LifecycleEvent,
  type LifecycleEventMsg,
  MigrateFlags,
  tp,
  VIR_ERR_AGENT_UNRESPONSIVE,
  VIR_ERR_NO_DOMAIN,
  VIR_ERR_OPERATION_INVALID,
  VIR_ERR_OPERATION_UNSUPPORTED,
  VIR_ERR_RPC,
} from '../../../src/drivers/libvirt';
import { integration } from '../../support/integration';
import { systemDaemonReachable, testDomainName, tinyDomainXML } from './support';

const available = await systemDaemonReachable();
const run = integration(
  'libvirtd (qemu:///system)',
  available,
  'libvirtd socket /var/run/libvirt/libvirt-sock not reachable',
);

/**
 * Reads this domain's lifecycle events up to and including the first `wanted` one and
 * returns their names (QEMU also reports e.g. `resumed` while starting, as the CPUs start).
 */
async function until(
  stream: EventStream<LifecycleEventMsg>,
  name: string,
  wanted: number,
): Promise<LifecycleEventMsg[]> {
  const out: LifecycleEventMsg[] = [];
  for (;;) {
    const r = await stream.next();
    if (r.done)
      throw new Error(
        `event stream ended before event ${wanted} for ${name}; got ${out.map((e) => e.eventName)}`,
      );
    if (r.value.dom.name !== name) continue;
    out.push(r.value);
    if (r.value.event === wanted) return out;
  }
}

describe.skipIf(!run)('LibvirtClient on qemu:///system', { timeout: 180_000 }, () => {
  let c: LibvirtClient;
  const name = testDomainName('qemu');
  const consoleName = testDomainName('console');
  const agentName = testDomainName('agent');
  beforeAll(async () => {
    c = await LibvirtClient.connect({ uri: 'qemu:///system' });
  });
  afterAll(async () => {
    // Always remove the test domains, whatever state a failure left them in.
    for (const n of [name, consoleName, agentName]) {
      const d = await c.domainLookupByName(n).catch(() => null);
      if (d) {
        await c.domainDestroy(d).catch(() => {});
        await c.domainUndefine(d).catch(() => {});
      }
    }
    await c?.close();
  });

  it('opens the QEMU driver and reads host capabilities', async () => {
    expect(await c.getType()).toBe('QEMU');
    expect(await c.getURI()).toBe('qemu:///system');
    expect(await c.getVersion()).toBeGreaterThanOrEqual(7_000_000);
    const caps = await c.getCapabilities();
    expect(caps).toMatch(/<arch>x86_64<\/arch>/);
    expect(caps).toContain("<domain type='qemu'");
    const node = await c.nodeGetInfo();
    expect(node.cpus).toBeGreaterThan(0);
    expect(node.memory).toBeGreaterThan(0);
  });

  it('reads domain capabilities for TCG', async () => {
    const dc = await c.getDomainCapabilities({ virtType: 'qemu', arch: 'x86_64' });
    expect(dc).toContain('<domainCapabilities>');
    expect(dc).toContain('<domain>qemu</domain>');
    expect(dc).toContain('<arch>x86_64</arch>');
  });

  it('reports SEV as unsupported with a typed error (the call itself decodes on the daemon)', async () => {
    const err = await c.nodeGetSEVInfo().catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.code).toBe(VIR_ERR_OPERATION_UNSUPPORTED);
  });

  it('runs a tiny domain through its lifecycle with events for start and stop', async () => {
    const dom = await c.domainDefineXML(tinyDomainXML(name));
    expect(dom.name).toBe(name);
    expect((await c.domainGetState(dom)).state).toBe(DomainState.SHUTOFF);
    expect(await c.domainLookupByUUID(dom.uuid)).toEqual(dom);

    // Config-only changes on the defined domain.
    await c.domainAttachDevice(dom, "<watchdog model='i6300esb' action='reset'/>", AffectFlags.CONFIG);
    expect(await c.domainGetXMLDesc(dom, DomainXMLFlags.INACTIVE)).toContain("model='i6300esb'");
    await c.domainDetachDevice(dom, "<watchdog model='i6300esb' action='reset'/>", AffectFlags.CONFIG);
    expect(await c.domainGetXMLDesc(dom, DomainXMLFlags.INACTIVE)).not.toContain('i6300esb');
    await c.domainSetMemory(dom, 24 * 1024, AffectFlags.CONFIG);
    expect(await c.domainGetXMLDesc(dom, DomainXMLFlags.INACTIVE)).toContain(
      "<currentMemory unit='KiB'>24576</currentMemory>",
    );

    const events = await c.domainEvents('lifecycle', dom);
    const running = await c.domainCreate(dom);
    expect(running.id).toBeGreaterThan(0);
    expect(await c.domainIsActive(dom)).toBe(true);
    expect((await c.domainGetState(dom)).state).toBe(DomainState.RUNNING);
    const started = (await until(events, name, LifecycleEvent.STARTED)).at(-1);
    expect(started?.eventName).toBe('started');
    expect(started?.dom.uuid).toBe(dom.uuid);

    await c.domainSuspend(dom);
    expect((await c.domainGetState(dom)).state).toBe(DomainState.PAUSED);
    await c.domainResume(dom);
    expect((await c.domainGetState(dom)).state).toBe(DomainState.RUNNING);
    expect((await until(events, name, LifecycleEvent.RESUMED)).map((e) => e.eventName)).toEqual([
      'suspended',
      'resumed',
    ]);

    const status = JSON.parse(await c.qemuMonitorCommand(dom, '{"execute":"query-status"}'));
    expect(status.return.status).toBe('running');
    await c.domainReset(dom);

    const info = await c.domainGetInfo(dom);
    expect(info.state).toBe(DomainState.RUNNING);
    expect(info.nrVirtCpu).toBe(1);
    expect(info.maxMem).toBe(32 * 1024);
    const stats = await c.getAllDomainStats([dom]);
    expect(stats[0].dom.name).toBe(name);
    expect(stats[0].params.find((p) => p.field === 'state.state')?.value).toBe(DomainState.RUNNING);
    expect((await c.domainMemoryStats(dom)).length).toBeGreaterThan(0);
    expect((await c.domainGetJobInfo(dom)).type).toBe(0);
    expect(await c.domainGetJobStats(dom)).toEqual({ type: 0, params: [] });
    const abort = await c.domainAbortJob(dom).catch((e) => e);
    expect(abort).toBeInstanceOf(LibvirtError);
    expect(abort.code).toBe(VIR_ERR_OPERATION_INVALID);
    // The migration tuning calls reach QEMU: the max downtime is a migration parameter any
    // running domain takes; post-copy needs an outgoing migration.
    await c.domainMigrateSetMaxDowntime(dom, 150);
    const postCopy = await c.domainMigrateStartPostCopy(dom).catch((e) => e);
    expect(postCopy).toBeInstanceOf(LibvirtError);
    expect(postCopy.code).toBe(VIR_ERR_OPERATION_INVALID);
    expect(postCopy.message).toMatch(/migrat/i);
    const agent = await c.qemuAgentCommand(dom, '{"execute":"guest-ping"}', 0).catch((e) => e);
    expect(agent).toBeInstanceOf(LibvirtError);
    expect(agent.message).toMatch(/agent/i);

    await c.domainDestroy(dom);
    expect((await c.domainGetState(dom)).state).toBe(DomainState.SHUTOFF);
    const stopped = (await until(events, name, LifecycleEvent.STOPPED)).at(-1);
    expect(stopped?.eventName).toBe('stopped');
    expect(stopped?.detail).toBe(1); // VIR_DOMAIN_EVENT_STOPPED_DESTROYED
    await events.close();

    await c.domainUndefine(dom);
    const gone = await c.domainLookupByName(name).catch((e) => e);
    expect(gone).toBeInstanceOf(LibvirtError);
    expect(gone.code).toBe(VIR_ERR_NO_DOMAIN);
  });

  it('streams the serial console (SeaBIOS output), then hot-plugs and unplugs a USB device with its device-removed event', async () => {
    const xml = `<domain type='qemu'><name>${consoleName}</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type><bios useserial='yes'/></os>
  <devices><serial type='pty'/><console type='pty'/><controller type='usb' model='piix3-uhci'/></devices></domain>`;
    const dom = await c.domainDefineXML(xml);
    const removedEvents = await c.domainEvents('device-removed', dom);
    await c.domainCreate(dom, CreateFlags.START_PAUSED);
    const con = await c.domainOpenConsole(dom);
    await c.domainResume(dom);
    let text = '';
    for await (const chunk of con) {
      text += chunk.toString('latin1');
      if (/Machine UUID [0-9a-f-]{36}/.test(text)) break;
    }
    expect(text).toContain('SeaBIOS');
    // The firmware prints the domain's own UUID: the bytes came from this guest.
    expect(text).toContain(`Machine UUID ${dom.uuid}`);

    // Live hot-plug and unplug of a USB tablet (USB unplug needs no guest cooperation).
    const tablet = "<input type='tablet' bus='usb'><alias name='ua-kvts-tablet'/></input>";
    await c.domainAttachDevice(dom, tablet, AffectFlags.LIVE);
    expect(await c.domainGetXMLDesc(dom)).toContain("<alias name='ua-kvts-tablet'/>");
    await c.domainDetachDevice(dom, tablet, AffectFlags.LIVE);
    const removed = await removedEvents.next();
    expect(removed.value).toMatchObject({ kind: 'device-removed', devAlias: 'ua-kvts-tablet' });
    expect(await c.domainGetXMLDesc(dom)).not.toContain('ua-kvts-tablet');

    await removedEvents.close();
    await c.domainDestroy(dom);
    await c.domainUndefine(dom);
  });

  it('delivers agent-lifecycle and reboot events; launch security and migration calls reach QEMU', async () => {
    const xml = `<domain type='qemu'><name>${agentName}</name><memory unit='MiB'>32</memory><vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices><channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel></devices></domain>`;
    const dom = await c.domainDefineXML(xml);
    const agentEvents = await c.domainEvents('agent-lifecycle', dom);
    const rebootEvents = await c.domainEvents('reboot', dom);
    await c.domainCreate(dom);
    // No agent runs in this guest: libvirt reports it disconnected because the domain started.
    const agent = await agentEvents.next();
    expect(agent.value).toMatchObject({ kind: 'agent-lifecycle', state: 2, reason: 1 });
    expect(agent.value?.dom.name).toBe(agentName);
    const ping = await c.qemuAgentCommand(dom, '{"execute":"guest-ping"}', 0).catch((e) => e);
    expect(ping).toBeInstanceOf(LibvirtError);
    expect(ping.code).toBe(VIR_ERR_AGENT_UNRESPONSIVE);

    // A QEMU system reset is reported as a reboot event.
    await c.domainReset(dom);
    const reboot = await rebootEvents.next();
    expect(reboot.value).toMatchObject({ kind: 'reboot', dom: { name: agentName, uuid: dom.uuid } });

    // Not an SEV guest: no launch-security data, and injecting a secret is refused by QEMU's driver.
    expect(await c.domainGetLaunchSecurityInfo(dom)).toEqual([]);
    const secret = await c
      .domainSetLaunchSecurityState(dom, [
        tp.string('sev-secret', 'AAAA'),
        tp.string('sev-secret-header', 'BBBB'),
      ])
      .catch((e) => e);
    expect(secret).toBeInstanceOf(LibvirtError);
    expect(secret.code).toBe(VIR_ERR_OPERATION_UNSUPPORTED);
    expect(secret.message).toMatch(/SEV/);

    // Peer-to-peer migration: the daemon decodes the typed parameters and, as the source
    // side of a p2p migration, connects to the destination itself, which does not exist.
    const mig = await c
      .domainMigrateToURI3(
        dom,
        'qemu+unix:///system?socket=/nonexistent/kvts-migrate.sock',
        [tp.string('destination_name', `${agentName}-dst`)],
        MigrateFlags.PEER2PEER | MigrateFlags.LIVE,
      )
      .catch((e) => e);
    expect(mig).toBeInstanceOf(LibvirtError);
    expect(mig.code).not.toBe(VIR_ERR_RPC);
    expect(mig.message).toContain("Failed to connect socket to '/nonexistent/kvts-migrate.sock'");
    expect((await c.domainGetState(dom)).state).toBe(DomainState.RUNNING);

    await agentEvents.close();
    await rebootEvents.close();
    await c.domainDestroy(dom);
    await c.domainUndefine(dom);
  });
});
