/**
 * LibvirtClient against the real libvirtd, opening the `test:///default` driver through the
 * daemon socket: host queries, lookups, the typed error for an unknown domain, the domain
 * lifecycle, and lifecycle events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DomainState,
  LibvirtClient,
  LibvirtError,
  LifecycleEvent,
  VIR_ERR_INVALID_ARG,
  VIR_ERR_NO_DOMAIN,
  VIR_ERR_OPERATION_INVALID,
} from '../../../src/drivers/libvirt';
import { integration } from '../../support/integration';
import { systemDaemonReachable, testDomainName, tinyDomainXML } from './support';

const available = await systemDaemonReachable();
const run = integration(
  'libvirtd (test:///default)',
  available,
  'libvirtd socket /var/run/libvirt/libvirt-sock not reachable',
);

describe.skipIf(!run)('LibvirtClient on test:///default', () => {
  let c: LibvirtClient;
  // test:///default is one shared instance in the daemon: other tests may act on its
  // built-in `test` domain, so lookups use a domain of this test's own.
  const own = testDomainName('lookup');
  beforeAll(async () => {
    c = await LibvirtClient.connect({ uri: 'test:///default' });
    await c.domainDefineXML(tinyDomainXML(own, 'test'));
  });
  afterAll(async () => {
    const d = await c?.domainLookupByName(own).catch(() => null);
    if (d) await c.domainUndefine(d);
    await c?.close();
  });

  it('reports the test driver, its version and URI', async () => {
    expect(await c.getType()).toBe('TEST');
    expect(await c.getURI()).toBe('test:///default');
    expect(await c.getLibVersion()).toBeGreaterThanOrEqual(9_000_000);
    expect(await c.getHostname()).toMatch(/\S/);
  });

  it('decodes node info of the test driver (fixed values from its default config)', async () => {
    const info = await c.nodeGetInfo();
    expect(info).toEqual({
      model: 'i686',
      memory: 3145728,
      cpus: 16,
      mhz: 1400,
      nodes: 2,
      sockets: 2,
      cores: 2,
      threads: 2,
    });
  });

  it('reads capabilities XML', async () => {
    const caps = await c.getCapabilities();
    expect(caps).toContain('<capabilities>');
    expect(caps).toContain('<host>');
  });

  it('finds a domain by name and UUID, with info, state, listing and stats', async () => {
    const byName = await c.domainLookupByName(own);
    expect(byName.name).toBe(own);
    expect(byName.id).toBe(-1);
    expect(byName.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const byUuid = await c.domainLookupByUUID(byName.uuid);
    expect(byUuid).toEqual(byName);
    const info = await c.domainGetInfo(byName);
    expect(info.nrVirtCpu).toBe(1);
    expect(info.maxMem).toBe(32 * 1024);
    expect(info.state).toBe(DomainState.SHUTOFF);
    expect((await c.domainGetState(byName)).state).toBe(DomainState.SHUTOFF);
    const all = await c.listAllDomains();
    expect(all.map((d) => d.name)).toContain(own);
    const stats = await c.getAllDomainStats([byName]);
    expect(stats).toHaveLength(1);
    expect(stats[0].dom.name).toBe(own);
    expect(stats[0].params.find((p) => p.field === 'state.state')?.value).toBe(DomainState.SHUTOFF);
  });

  it('rejects an unknown domain with LibvirtError code 42 (VIR_ERR_NO_DOMAIN)', async () => {
    const err = await c.domainLookupByName('kvts-test-libvirt-does-not-exist').catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.code).toBe(VIR_ERR_NO_DOMAIN);
    expect(err.code).toBe(42);
    expect(err.message).toMatch(/not found/i);
  });

  it('defines, starts, suspends, resumes, destroys and undefines a domain, with lifecycle events', async () => {
    const name = testDomainName('testdrv');
    const events = await c.domainEvents('lifecycle');
    const dom = await c.domainDefineXML(tinyDomainXML(name, 'test'));
    try {
      expect(dom.name).toBe(name);
      expect(dom.id).toBe(-1);
      const started = await c.domainCreate(dom);
      expect(started.id).toBeGreaterThan(0);
      expect((await c.domainGetState(dom)).state).toBe(DomainState.RUNNING);
      await c.domainSuspend(dom);
      expect((await c.domainGetState(dom)).state).toBe(DomainState.PAUSED);
      await c.domainResume(dom);
      expect((await c.domainGetState(dom)).state).toBe(DomainState.RUNNING);
      expect(await c.domainGetXMLDesc(dom)).toContain(`<name>${name}</name>`);
      await c.domainDestroy(dom);
      expect((await c.domainGetState(dom)).state).toBe(DomainState.SHUTOFF);
      // Destroying a stopped domain is an operation-invalid error, typed as such.
      const again = await c.domainDestroy(dom).catch((e) => e);
      expect(again).toBeInstanceOf(LibvirtError);
      expect(again.code).toBe(VIR_ERR_OPERATION_INVALID);
    } finally {
      await c.domainUndefine(dom).catch(() => {});
    }
    const seen: number[] = [];
    for await (const ev of events) {
      if (ev.dom.name !== name) continue;
      seen.push(ev.event);
      if (ev.event === LifecycleEvent.UNDEFINED) break;
    }
    expect(seen).toEqual([
      LifecycleEvent.DEFINED,
      LifecycleEvent.STARTED,
      LifecycleEvent.SUSPENDED,
      LifecycleEvent.RESUMED,
      LifecycleEvent.STOPPED,
      LifecycleEvent.UNDEFINED,
    ]);
    expect(events.isEnded).toBe(true);
    const gone = await c.domainLookupByName(name).catch((e) => e);
    expect(gone.code).toBe(VIR_ERR_NO_DOMAIN);
  });

  it('pipelines many calls on one connection and matches replies by serial', async () => {
    const names = Array.from({ length: 200 }, (_, i) =>
      i % 2 === 0 ? own : `kvts-test-libvirt-missing-${i}`,
    );
    const results = await Promise.allSettled(names.map((n) => c.domainLookupByName(n)));
    results.forEach((r, i) => {
      if (i % 2 === 0) expect(r.status === 'fulfilled' && r.value.name).toBe(own);
      else expect(r.status === 'rejected' && (r.reason as LibvirtError).code).toBe(VIR_ERR_NO_DOMAIN);
    });
  });

  it('rejects a NUL byte in a domain name before it reaches the wire', async () => {
    const err = await c.domainLookupByName('bad\0name').catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.message).toContain('domain name');
  });

  it('rejects numbers that do not fit the wire type, naming the call and the argument', async () => {
    const dom = await c.domainLookupByName(own);
    const neg = await c.domainSetMemory(dom, -5).catch((e) => e);
    expect(neg).toBeInstanceOf(LibvirtError);
    expect(neg.code).toBe(VIR_ERR_INVALID_ARG);
    expect(neg.message).toBe(
      'REMOTE_PROC_DOMAIN_SET_MEMORY_FLAGS: invalid argument: memoryKiB: must be an unsigned 64-bit integer, got -5',
    );
    const frac = await c.domainSetVcpus(dom, 1.5).catch((e) => e);
    expect(frac.message).toContain('nvcpus: must be an unsigned 32-bit integer, got 1.5');
    const flags = await c.domainGetXMLDesc(dom, 2 ** 32).catch((e) => e);
    expect(flags.message).toContain('REMOTE_PROC_DOMAIN_GET_XML_DESC: invalid argument: flags');
    const uuid = await c.domainLookupByUUID('not-a-uuid').catch((e) => e);
    expect(uuid.message).toMatch(/is not a UUID/);
    // The connection is unaffected by refused arguments.
    expect((await c.domainLookupByName(own)).name).toBe(own);
  });
});
