/**
 * Live migration between fake hosts, following libvirt's peer-to-peer flow: the target
 * is prepared (its domain definition returned as the cookie), the source runs a job
 * that can be watched (`progress`) and aborted (`cancel`), and on success the domain
 * leaves the source (stopped, reason `migrated`, undefined) and runs on the target
 * (started, reason `migrated`) without a reboot.
 */
import { type DomainRef, domainName, type MigrationSupport, refOf } from '../driver';
import { DriverError } from '../errors';
import type { FakeDomain, FakeHost } from './fake-host';
import { fakeHostAt } from './fake-network';

/** How fake migrations behave. */
export interface FakeMigrationBehaviour {
  /** How long an outgoing migration takes, ms (default 0: it completes on the next tick). */
  durationMs?: number;
  /** The job never makes progress (to exercise a progress timeout). */
  stalls?: boolean;
}

/** Migration support over `host`; `enter` applies the driver's latency and injected failures. */
export function fakeMigrationSupport(
  host: FakeHost,
  enter: () => Promise<void>,
  behaviour: FakeMigrationBehaviour = {},
): MigrationSupport {
  const get = (ref: DomainRef): FakeDomain => {
    const dom = host.domains.get(domainName(ref));
    if (!dom) {
      throw new DriverError(
        'NotFound',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain ${domainName(ref)} on this host`,
      );
    }
    return dom;
  };
  return {
    async prepareTarget(vmi) {
      await enter();
      const name = domainName(refOf(vmi));
      const existing = host.domains.get(name);
      if (existing && existing.info.state !== 'shutoff') {
        throw new DriverError(
          'InvalidState',
          `domain ${name}: cannot prepare an incoming migration, a domain of that name is ${existing.info.state} here`,
        );
      }
      return JSON.stringify({ fakeDomain: name, vmiUid: vmi.metadata?.uid ?? '' });
    },

    async migrateSource(ref, targetUri, _cookie, options) {
      await enter();
      const name = domainName(ref);
      const dom = get(ref);
      if (dom.info.state === 'shutoff' || dom.info.state === 'crashed') {
        throw new DriverError('InvalidState', `domain ${name}: cannot migrate, it is ${dom.info.state}`);
      }
      if (dom.migration)
        throw new DriverError('InvalidState', `domain ${name}: a migration job is already running`);
      const target = fakeHostAt(targetUri);
      if (!target) {
        throw new DriverError(
          'Hypervisor',
          `domain ${name}: migrate to ${targetUri} failed: unable to connect to ${targetUri}: no fake host there`,
        );
      }
      if (target === host) {
        throw new DriverError(
          'Hypervisor',
          `domain ${name}: migrate to ${targetUri} failed: internal error: Attempt to migrate guest to the same host`,
        );
      }
      const job = {
        startedAt: Date.now(),
        total: dom.info.memoryKiB * 1024,
        cancelled: false,
        postCopyAllowed: options?.allowPostCopy ?? false,
        postCopy: false,
        wake: () => {},
      };
      dom.migration = job;
      try {
        await new Promise<void>((resolve) => {
          job.wake = resolve;
          const t = setTimeout(resolve, behaviour.durationMs ?? 0);
          t.unref?.();
        });
      } finally {
        dom.migration = undefined;
      }
      if (job.cancelled) {
        throw new DriverError(
          'Hypervisor',
          `domain ${name}: migrate to ${targetUri} failed: operation aborted: migration out: canceled by client`,
        );
      }
      if (host.domains.get(name) !== dom || (dom.info.state as string) === 'shutoff') {
        throw new DriverError('InvalidState', `domain ${name}: stopped while migrating`);
      }
      // The guest moves: same UUID and boot, now on the target host.
      const moved: FakeDomain = {
        vmi: structuredClone(dom.vmi),
        boots: dom.boots,
        cpuTimeNs: dom.cpuTimeNs,
        sevSecret: dom.sevSecret,
        info: { ...dom.info, state: 'running', reason: 'migrated' },
      };
      target.domains.set(name, moved);
      target.emit({ type: 'defined', domain: name, updated: false });
      target.emit({ type: 'started', domain: name, reason: 'migrated' });
      host.setState(dom, 'shutoff', 'migrated');
      host.emit({ type: 'stopped', domain: name, reason: 'migrated' });
      host.domains.delete(name);
      host.emit({ type: 'undefined', domain: name });
    },

    async progress(ref) {
      await enter();
      const job = get(ref).migration;
      if (!job) return undefined;
      const elapsedMs = Date.now() - job.startedAt;
      const duration = behaviour.durationMs ?? 0;
      const done = behaviour.stalls ? 0 : duration > 0 ? Math.min(1, elapsedMs / duration) : 1;
      const processed = Math.floor(job.total * done);
      return {
        dataTotal: job.total,
        dataProcessed: processed,
        dataRemaining: job.total - processed,
        elapsedMs,
      };
    },

    async cancel(ref) {
      await enter();
      const dom = get(ref);
      if (!dom.migration) {
        throw new DriverError('InvalidState', `domain ${dom.info.name}: no migration job is running`);
      }
      dom.migration.cancelled = true;
      dom.migration.wake();
    },

    async startPostCopy(ref) {
      await enter();
      const dom = get(ref);
      const job = dom.migration;
      if (!job) throw new DriverError('InvalidState', `domain ${dom.info.name}: no migration job is running`);
      if (!job.postCopyAllowed) {
        throw new DriverError(
          'Invalid',
          `domain ${dom.info.name}: switching to post-copy requires migration to be started with VIR_MIGRATE_POSTCOPY flag`,
        );
      }
      // The guest runs on the target now; the rest of its memory follows on demand.
      job.postCopy = true;
      job.wake();
    },

    async setMaxDowntime(ref, ms) {
      await enter();
      const dom = get(ref);
      if (!dom.migration)
        throw new DriverError('InvalidState', `domain ${dom.info.name}: no migration job is running`);
      dom.migration.maxDowntimeMs = ms;
    },

    async abortTarget(ref) {
      await enter();
      const name = domainName(ref);
      if (!host.domains.has(name)) return;
      host.domains.delete(name);
      host.emit({ type: 'undefined', domain: name });
    },
  };
}
