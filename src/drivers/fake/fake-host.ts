/**
 * The in-memory "host" the fake driver runs domains on. Kept apart from the driver so
 * several driver instances can share one host: that is how a test proves restart
 * adoption (a new driver finds the domains an earlier one started).
 */
import type { VirtualMachineInstance } from '../../api';
import type { DomainEvent, DomainInfo, DomainState, HostCapabilities, SevSecret } from '../driver';
import { EventHub } from '../event-hub';

/** A domain held by a `FakeHost`. */
export interface FakeDomain {
  info: DomainInfo;
  vmi: VirtualMachineInstance;
  /** How many times it was started. */
  boots: number;
  /** How each soft reboot asked the guest, oldest first. */
  softReboots?: Array<'agent' | 'acpi'>;
  cpuTimeNs: number;
  /** The SEV launch secret injected into it, if any. */
  sevSecret?: SevSecret;
  /** The outgoing migration running now, if any. */
  migration?: FakeMigrationJob;
  /** Hotplugged volumes (fake-hotplug.ts). */
  hotplugged?: Set<string>;
  /** The VMI interfaces it has, once NIC hotplug looked (fake-nic-hotplug.ts). */
  nics?: string[];
  /** Memory plugged by virtio-mem, KiB (fake-memory-hotplug.ts). */
  hotpluggedKiB?: number;
}

/** An outgoing migration of a fake domain. */
export interface FakeMigrationJob {
  startedAt: number;
  /** Bytes to move (the guest's memory). */
  total: number;
  /** Set by `cancel`; the migration then fails as libvirt's does. */
  cancelled: boolean;
  /** Started with `allowPostCopy`: `startPostCopy` may switch it. */
  postCopyAllowed: boolean;
  /** Switched to post-copy (the guest moved at once). */
  postCopy: boolean;
  /** The max downtime `setMaxDowntime` set, ms. */
  maxDowntimeMs?: number;
  /** Wakes the migration early (on cancel). */
  wake: () => void;
}

/** Default capabilities of a fake host: an x86_64 box without KVM. */
export function defaultFakeCapabilities(): HostCapabilities {
  return {
    driver: 'fake',
    arch: 'x86_64',
    kvmUsable: false,
    emulationAvailable: true,
    cpuModels: ['qemu64', 'Skylake-Client', 'EPYC'],
    cpuFeatures: ['sse2', 'x2apic'],
    maxVcpus: 255,
    memoryBytes: 16 * 1024 ** 3,
    hugepageSizesKiB: [2048],
    machineTypes: ['q35', 'pc-q35-7.2'],
  };
}

/** Deterministic in-memory host state. */
export class FakeHost {
  readonly domains = new Map<string, FakeDomain>();
  readonly events = new EventHub<DomainEvent>();
  capabilities: HostCapabilities;
  private uuidCounter = 0;

  constructor(capabilities: Partial<HostCapabilities> = {}) {
    this.capabilities = { ...defaultFakeCapabilities(), ...capabilities };
  }

  /** A deterministic UUID (the n-th one this host handed out). */
  nextUuid(): string {
    this.uuidCounter++;
    return `00000000-0000-4000-8000-${this.uuidCounter.toString(16).padStart(12, '0')}`;
  }

  /** Moves a domain to `state`, recording `reason`. */
  setState(domain: FakeDomain, state: DomainState, reason: string): void {
    domain.info = { ...domain.info, state, reason };
  }

  emit(event: DomainEvent): void {
    this.events.publish(event);
  }
}
