/**
 * The driver conformance suite. Any `HypervisorDriver` (ours or a third party's)
 * proves itself by calling `runDriverConformance` inside a vitest test file: it
 * registers `describe`/`it` blocks covering lifecycle transitions, idempotent sync,
 * events, error reporting and restart adoption. It imports `vitest`, so it is only for
 * test code (vitest is a dev dependency of whoever runs it).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../api';
import type { DomainEvent, DomainInfo, DomainRef, HypervisorDriver, SyncOptions } from '../driver';
import { DriverError } from '../errors';
import { type EventRecorder, recordEvents } from './events';

/** Options of `runDriverConformance`. */
export interface ConformanceOptions {
  /** Builds the VMI each test runs (default: `minimalVmi`). Must honour name and namespace. */
  makeVmi?: (ref: DomainRef) => VirtualMachineInstance;
  /** Namespace of the test VMIs (default `kvts-conformance`). */
  namespace?: string;
  /** Prefix of VMI names, to find leftovers (default `kvts-conf-`). */
  namePrefix?: string;
  /** Passed to every `sync` (e.g. `{ useEmulation: true }`). */
  syncOptions?: SyncOptions;
  /** Grace period of the shutdown test, seconds (default 2). */
  shutdownGraceSeconds?: number;
  /** How long to wait for one event, ms (default 30000); a deadline, not a speed check. */
  eventTimeoutMs?: number;
  /** When set, the suite is registered as skipped with this reason. */
  skip?: string;
  /** Called after all tests, after the suite deleted its domains. */
  teardown?: () => Promise<void>;
}

/** The smallest VMI a driver must run: 1 vCPU, 64 MiB, no disks. */
export function minimalVmi(ref: DomainRef): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: ref.name, namespace: ref.namespace, uid: randomUUID() },
    spec: {
      domain: {
        cpu: { cores: 1, sockets: 1, threads: 1 },
        memory: { guest: '64Mi' },
        resources: { requests: { memory: '64Mi' } },
        devices: {},
      },
    },
  } as VirtualMachineInstance;
}

/**
 * Registers the conformance tests for the driver `makeDriver` builds. `makeDriver` is
 * called once for the suite and once more for the restart-adoption test: both
 * instances must see the same host (for an in-memory driver, share its state).
 */
export function runDriverConformance(
  name: string,
  makeDriver: () => HypervisorDriver | Promise<HypervisorDriver>,
  options: ConformanceOptions = {},
): void {
  const namespace = options.namespace ?? 'kvts-conformance';
  const prefix = options.namePrefix ?? 'kvts-conf-';
  const makeVmi = options.makeVmi ?? minimalVmi;
  const syncOptions = options.syncOptions ?? {};
  const timeout = options.eventTimeoutMs ?? 30_000;
  const grace = options.shutdownGraceSeconds ?? 2;
  const run = `${Date.now().toString(36)}${Math.floor(Math.random() * 1e4).toString(36)}`;
  let counter = 0;
  const created: DomainRef[] = [];

  const suite = options.skip ? describe.skip : describe;
  suite(`driver conformance: ${name}${options.skip ? ` (skipped: ${options.skip})` : ''}`, () => {
    let driver: HypervisorDriver;
    let events: EventRecorder;

    const newRef = (): DomainRef => {
      const ref = { namespace, name: `${prefix}${run}-${++counter}` };
      created.push(ref);
      return ref;
    };
    const dn = (ref: DomainRef) => `${ref.namespace}_${ref.name}`;
    const eventFor = (ref: DomainRef, type: DomainEvent['type']) =>
      events.waitFor((e) => e.domain === dn(ref) && e.type === type, timeout, `${type} of ${dn(ref)}`);
    const started = async (): Promise<{ ref: DomainRef; vmi: VirtualMachineInstance; info: DomainInfo }> => {
      const ref = newRef();
      const vmi = makeVmi(ref);
      const info = await driver.sync(vmi, syncOptions);
      return { ref, vmi, info };
    };
    const expectCode = async (p: Promise<unknown>, code: DriverError['code'], mention: string) => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, `expected a DriverError ${code}`).toBeInstanceOf(DriverError);
      expect((err as DriverError).code).toBe(code);
      expect((err as DriverError).message).toContain(mention);
    };

    beforeAll(async () => {
      driver = await makeDriver();
      events = recordEvents(driver);
    });

    // Each test's domains go when it ends, so real guests do not pile up on the host.
    afterEach(async () => {
      for (const ref of created.splice(0)) await driver?.delete(ref).catch(() => undefined);
    });

    afterAll(async () => {
      events?.stop();
      if (driver) await driver.close();
      await options.teardown?.();
    });

    it('probes the host', async () => {
      const caps = await driver.probe();
      expect(caps.driver).toBe(driver.name);
      expect(caps.arch.length).toBeGreaterThan(0);
      expect(caps.maxVcpus).toBeGreaterThan(0);
      expect(caps.memoryBytes).toBeGreaterThan(0);
      expect(caps.kvmUsable || caps.emulationAvailable).toBe(true);
    });

    it('sync defines and starts a domain, named <namespace>_<name>, and reports started', async () => {
      const { ref, info } = await started();
      expect(info.name).toBe(dn(ref));
      expect(info.state).toBe('running');
      expect(info.bootId).not.toBe('');
      await eventFor(ref, 'started');
      const got = await driver.getDomain(ref);
      expect(got?.state).toBe('running');
      expect(got?.vmi).toEqual(ref);
      expect(got?.bootId).toBe(info.bootId);
    });

    it('sync is idempotent: a running domain is neither restarted nor duplicated', async () => {
      const { ref, vmi, info } = await started();
      const again = await driver.sync(vmi, syncOptions);
      expect(again.state).toBe('running');
      expect(again.bootId).toBe(info.bootId);
      expect(again.uuid).toBe(info.uuid);
      const all = (await driver.listDomains()).filter((d) => d.name === dn(ref));
      expect(all).toHaveLength(1);
    });

    it('pauses and unpauses, reporting paused and resumed', async () => {
      const { ref, info } = await started();
      await driver.pause(ref);
      expect((await driver.getDomain(ref))?.state).toBe('paused');
      await eventFor(ref, 'paused');
      await driver.unpause(ref);
      const after = await driver.getDomain(ref);
      expect(after?.state).toBe('running');
      expect(after?.bootId).toBe(info.bootId);
      await eventFor(ref, 'resumed');
    });

    it('kill stops the domain and reports stopped; sync starts it again with a new boot', async () => {
      const { ref, vmi, info } = await started();
      await driver.kill(ref);
      expect((await driver.getDomain(ref))?.state).toBe('shutoff');
      await eventFor(ref, 'stopped');
      const again = await driver.sync(vmi, syncOptions);
      expect(again.state).toBe('running');
      expect(again.bootId).not.toBe(info.bootId);
    });

    it('shutdown stops the domain within the grace period (or kills it after) and reports stopped', async () => {
      const { ref } = await started();
      await driver.shutdown(ref, { graceSeconds: grace });
      await eventFor(ref, 'stopped');
      expect((await driver.getDomain(ref))?.state).toBe('shutoff');
    });

    it('reset and softReboot keep a running domain running', async () => {
      const { ref } = await started();
      await driver.reset(ref);
      expect((await driver.getDomain(ref))?.state).toBe('running');
      await driver.softReboot(ref);
      const st = (await driver.getDomain(ref))?.state;
      expect(['running', 'shutdown']).toContain(st);
    });

    it('reports stats of a running domain', async () => {
      const { ref } = await started();
      const stats = await driver.getStats(ref);
      expect(stats.name).toBe(dn(ref));
      expect(stats.vcpus).toBeGreaterThan(0);
      expect(stats.memoryKiB).toBeGreaterThan(0);
      expect(stats.cpuTimeNs).toBeGreaterThanOrEqual(0);
    });

    it('delete removes the domain, reports undefined, and is idempotent', async () => {
      const { ref } = await started();
      await driver.delete(ref);
      expect(await driver.getDomain(ref)).toBeUndefined();
      await eventFor(ref, 'undefined');
      await driver.delete(ref);
      expect((await driver.listDomains()).some((d) => d.name === dn(ref))).toBe(false);
    });

    it('guest agent (when the driver has one): absent or answering, never an error; gone when stopped', async (ctx) => {
      const agent = driver.guestAgent;
      if (!agent) {
        ctx.skip(`${driver.name} has no guestAgent capability`);
        return;
      }
      const { ref } = await started();
      const connected = await agent.connected(ref);
      const info = await agent.guestInfo(ref);
      if (!connected) expect(info).toBeUndefined();
      if (info !== undefined) {
        expect(typeof info.agentVersion).toBe('string');
        for (const i of info.interfaces ?? []) expect(Array.isArray(i.ipAddresses)).toBe(true);
      }
      await driver.kill(ref);
      expect(await agent.connected(ref)).toBe(false);
      expect(await agent.guestInfo(ref)).toBeUndefined();
      const ghost = { namespace, name: `${prefix}${run}-no-agent` };
      await expectCode(agent.guestInfo(ghost), 'NotFound', dn(ghost));
    });

    it('reports errors with codes and names the domain', async () => {
      const ghost = { namespace, name: `${prefix}${run}-absent` };
      expect(await driver.getDomain(ghost)).toBeUndefined();
      await expectCode(driver.pause(ghost), 'NotFound', dn(ghost));
      await expectCode(driver.kill(ghost), 'NotFound', dn(ghost));
      await expectCode(driver.getStats(ghost), 'NotFound', dn(ghost));
      const { ref } = await started();
      await driver.kill(ref);
      await expectCode(driver.pause(ref), 'InvalidState', dn(ref));
      await expectCode(driver.reset(ref), 'InvalidState', dn(ref));
    });

    it('a new driver instance adopts running domains without restarting them', async () => {
      const { ref, vmi, info } = await started();
      const second = await makeDriver();
      try {
        const listed = (await second.listDomains()).find((d) => d.name === dn(ref));
        expect(listed?.state).toBe('running');
        expect(listed?.bootId).toBe(info.bootId);
        const synced = await second.sync(vmi, syncOptions);
        expect(synced.bootId).toBe(info.bootId);
        await second.pause(ref);
        expect((await driver.getDomain(ref))?.state).toBe('paused');
      } finally {
        await second.close();
      }
    });

    it('ends an event subscription when the consumer leaves the loop', async () => {
      const { ref } = await started();
      const iterable = driver.events();
      const seen: DomainEvent[] = [];
      const loop = (async () => {
        for await (const e of iterable) {
          seen.push(e);
          if (e.domain === dn(ref) && e.type === 'paused') break;
        }
      })();
      await driver.pause(ref);
      await loop;
      expect(seen.some((e) => e.type === 'paused' && e.domain === dn(ref))).toBe(true);
    });
  });
}
