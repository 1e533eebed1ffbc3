/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection: a
 * candidate takes the Lease when it is free or its holder has not renewed it within
 * `leaseDuration` (judged on the local clock from when this candidate last saw it change,
 * so clock skew between hosts does not matter); the leader renews every `retryPeriod`
 * and steps down when it could not renew for `renewDeadline`. Writes use the Lease's
 * resourceVersion, so two candidates can never both win.
 */
import { sleep } from './backoff';
import { isAlreadyExists, isConflict, isNotFound } from './errors';
import { LeaseType } from './resources';
import type { KubeObject, ObjectClient } from './types';

/** The Lease to hold, this candidate's identity, and the lease, renew and retry timings. */
export interface LeaderElectionOptions {
  /** Lease name, e.g. `virt-controller`. */
  name: string;
  namespace: string;
  /** This candidate's unique identity (pod name, host + pid). */
  identity: string;
  /** How long a Lease holds without renewal (default 15000 ms). */
  leaseDurationMs?: number;
  /** A leader that could not renew for this long steps down (default 10000 ms; < leaseDurationMs). */
  renewDeadlineMs?: number;
  /** Interval between attempts (default 2000 ms). */
  retryPeriodMs?: number;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

type Lease = KubeObject & { spec?: LeaseSpec };

/** MicroTime as the API server wants it: RFC 3339 with six fractional digits. */
function microTime(d = new Date()): string {
  return d.toISOString().replace(/Z$/, '000Z');
}

/**
 * One candidate for a Lease (see the file comment): `acquire` waits to win it,
 * `renewLoop` keeps it until renewal fails or is aborted, `release` gives it up.
 */
export class LeaderElector {
  private observed?: string;
  private observedAt = 0;
  private leader = false;
  private readonly leaseMs: number;
  private readonly renewMs: number;
  private readonly retryMs: number;

  constructor(
    private readonly client: ObjectClient,
    readonly options: LeaderElectionOptions,
  ) {
    this.leaseMs = options.leaseDurationMs ?? 15_000;
    this.renewMs = options.renewDeadlineMs ?? 10_000;
    this.retryMs = options.retryPeriodMs ?? 2_000;
    if (this.renewMs >= this.leaseMs) {
      throw new Error(
        `leader election ${options.name}: renewDeadlineMs must be smaller than leaseDurationMs`,
      );
    }
  }

  isLeader(): boolean {
    return this.leader;
  }

  /** Waits until this candidate holds the Lease; false when `signal` aborted first. */
  async acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew().catch(() => false)) {
        this.leader = true;
        return true;
      }
      await sleep(this.retryMs * (1 + Math.random() * 0.2), signal);
    }
    return false;
  }

  /** Renews until renewal fails for `renewDeadline` (returns: leadership lost) or `signal` aborts. */
  async renewLoop(signal: AbortSignal): Promise<void> {
    let lastRenew = Date.now();
    while (!signal.aborted) {
      await sleep(this.retryMs, signal);
      if (signal.aborted) break;
      if (await this.tryAcquireOrRenew().catch(() => false)) lastRenew = Date.now();
      else if (Date.now() - lastRenew >= this.renewMs) {
        this.leader = false;
        return;
      }
    }
  }

  /** Gives the Lease up (holder cleared) so another candidate takes over at once. */
  async release(): Promise<void> {
    if (!this.leader) return;
    this.leader = false;
    try {
      const lease = await this.client.get<Lease>(LeaseType, this.options.name, this.options.namespace);
      if (lease.spec?.holderIdentity !== this.options.identity) return;
      await this.client.update(LeaseType, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1, renewTime: microTime() },
      });
    } catch {
      // The lease will expire on its own.
    }
  }

  /** One attempt; true when this candidate holds the Lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { name, namespace, identity } = this.options;
    const now = new Date();
    const durationSeconds = Math.max(1, Math.ceil(this.leaseMs / 1000));
    let lease: Lease;
    try {
      lease = await this.client.get<Lease>(LeaseType, name, namespace);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await this.client.create(LeaseType, {
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: durationSeconds,
            acquireTime: microTime(now),
            renewTime: microTime(now),
            leaseTransitions: 0,
          },
        } as Lease);
        this.observe(`${identity}|created`);
        return true;
      } catch (e) {
        if (isAlreadyExists(e)) return false;
        throw e;
      }
    }
    const spec = lease.spec ?? {};
    this.observe(JSON.stringify(spec));
    const holder = spec.holderIdentity;
    const heldFor = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && holder !== identity && Date.now() - this.observedAt < heldFor) return false;
    const next: LeaseSpec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: microTime(now),
    };
    if (holder !== identity) {
      next.acquireTime = microTime(now);
      next.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
    }
    try {
      const updated = await this.client.update<Lease>(LeaseType, { ...lease, spec: next });
      this.observe(JSON.stringify(updated.spec));
      return true;
    } catch (err) {
      if (isConflict(err)) return false;
      throw err;
    }
  }

  private observe(record: string): void {
    if (record !== this.observed) {
      this.observed = record;
      this.observedAt = Date.now();
    }
  }
}
