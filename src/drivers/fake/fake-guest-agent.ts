/**
 * The fake driver's guest agent: deterministic and settable. A domain's agent is absent
 * until a test connects it with `connect(ref, info?)` (default: {@link fakeGuestInfo});
 * it answers only while the domain runs, like a real agent. State lives with the
 * `FakeHost`, so every driver instance on that host sees the same agents.
 */
import { type DomainRef, domainName } from '../driver';
import { DriverError } from '../errors';
import type { GuestAgentSupport, GuestInfo } from '../guest-agent';
import type { FakeHost } from './fake-host';

const agentsByHost = new WeakMap<FakeHost, Map<string, GuestInfo>>();
/** Per domain, per user: the authorized keys and the password the agent was given. */
interface FakeGuestAccounts {
  keys: Map<string, string[]>;
  passwords: Map<string, string>;
}
const accountsByHost = new WeakMap<FakeHost, Map<string, FakeGuestAccounts>>();

/** A deterministic guest-agent answer for a domain (what the tiny test guest reports, roughly). */
export function fakeGuestInfo(ref: DomainRef, overrides: Partial<GuestInfo> = {}): GuestInfo {
  return {
    agentVersion: '7.2.0',
    supportedCommands: [
      { name: 'guest-info', enabled: true },
      { name: 'guest-get-osinfo', enabled: true },
      { name: 'guest-network-get-interfaces', enabled: true },
    ],
    hostname: ref.name,
    os: {
      id: 'fake',
      name: 'Fake Linux',
      prettyName: 'Fake Linux 1.0',
      version: '1.0 (fake)',
      versionId: '1.0',
      kernelRelease: '6.1.0-fake-amd64',
      kernelVersion: '#1 SMP fake',
      machine: 'x86_64',
    },
    timezone: { zone: 'UTC', offsetSeconds: 0 },
    interfaces: [
      {
        name: 'lo',
        mac: '00:00:00:00:00:00',
        ipAddresses: [{ address: '127.0.0.1', type: 'ipv4', prefix: 8 }],
      },
    ],
    users: [],
    filesystems: [],
    ...overrides,
  };
}

/** The settable guest agent of a fake host. */
export class FakeGuestAgent implements GuestAgentSupport {
  constructor(private readonly host: FakeHost) {}

  private get agents(): Map<string, GuestInfo> {
    let m = agentsByHost.get(this.host);
    if (!m) {
      m = new Map();
      agentsByHost.set(this.host, m);
    }
    return m;
  }

  /** Puts an agent in the domain's guest answering `info` (default {@link fakeGuestInfo}). */
  connect(ref: DomainRef, info: GuestInfo = fakeGuestInfo(ref)): void {
    this.agents.set(domainName(ref), structuredClone(info));
    this.host.emit({ type: 'agent', domain: domainName(ref), connected: true });
  }

  /** Takes the agent away (the guest stopped it, or it never had one). */
  disconnect(ref: DomainRef): void {
    if (this.agents.delete(domainName(ref))) {
      this.host.emit({ type: 'agent', domain: domainName(ref), connected: false });
    }
  }

  /** The channel stays connected while the guest is paused, as a real one does. */
  async connected(ref: DomainRef): Promise<boolean> {
    const state = this.stateOf(ref);
    return (state === 'running' || state === 'paused') && this.agents.has(domainName(ref));
  }

  /** A paused guest's agent does not answer (its vCPUs are stopped). */
  async guestInfo(ref: DomainRef): Promise<GuestInfo | undefined> {
    const info = this.stateOf(ref) === 'running' ? this.agents.get(domainName(ref)) : undefined;
    return info ? structuredClone(info) : undefined;
  }

  /** `guest-ssh-add-authorized-keys` with reset: only a running guest's agent answers. */
  async setAuthorizedKeys(ref: DomainRef, user: string, keys: string[]): Promise<{ legacy: boolean }> {
    this.accountsOf(ref).keys.set(user, [...keys]);
    return { legacy: false };
  }

  /** `guest-ping`: answers while the guest runs with an agent. */
  async ping(ref: DomainRef, _timeoutSec: number): Promise<void> {
    this.accountsOf(ref);
  }

  /** `guest-set-user-password`. */
  async setUserPassword(ref: DomainRef, user: string, password: string): Promise<void> {
    this.accountsOf(ref).passwords.set(user, password);
  }

  /** What the guest's `~user/.ssh/authorized_keys` holds (tests). */
  authorizedKeys(ref: DomainRef, user: string): string[] | undefined {
    return accountsByHost.get(this.host)?.get(domainName(ref))?.keys.get(user);
  }

  /** The password the agent last set for `user` (tests). */
  password(ref: DomainRef, user: string): string | undefined {
    return accountsByHost.get(this.host)?.get(domainName(ref))?.passwords.get(user);
  }

  private accountsOf(ref: DomainRef): FakeGuestAccounts {
    const name = domainName(ref);
    if (this.stateOf(ref) !== 'running' || !this.agents.has(name)) {
      throw new DriverError(
        'Hypervisor',
        `domain ${name}: Guest agent is not responding: QEMU guest agent is not connected`,
      );
    }
    const all = accountsByHost.get(this.host) ?? new Map<string, FakeGuestAccounts>();
    accountsByHost.set(this.host, all);
    const acc = all.get(name) ?? { keys: new Map(), passwords: new Map() };
    all.set(name, acc);
    return acc;
  }

  private stateOf(ref: DomainRef): string {
    const name = domainName(ref);
    const dom = this.host.domains.get(name);
    if (!dom) {
      throw new DriverError(
        'NotFound',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain ${name} on this host`,
      );
    }
    return dom.info.state;
  }
}
