/**
 * The libvirt driver's filesystem freeze: virDomainFSFreeze / virDomainFSThaw, which run
 * the QEMU guest agent's `guest-fsfreeze-freeze` / `guest-fsfreeze-thaw` in the guest.
 * The state is the agent's `guest-fsfreeze-status`. The agent's own refusals (no agent, already frozen, nothing it may freeze) come back as
 * libvirt's errors, mapped to `DriverError`s that keep the agent's message.
 */
import type { DomainRef, FsFreezeSupport } from '../driver';
import { DriverError } from '../errors';
import type { LibvirtClient, DomainRef as LibvirtDomain } from '../libvirt';
import { mapLibvirtError } from './error-map';

const STATUS_CMD = JSON.stringify({ execute: 'guest-fsfreeze-status' });
/** Seconds libvirt waits for the agent's status answer. */
const AGENT_TIMEOUT_SECONDS = 10;

/** What the capability needs from the driver. */
export interface FsFreezeHost {
  /** The driver's connection (read when called: the driver may reconnect). */
  client(): LibvirtClient;
  /** The running (or paused) domain, or a `DriverError`. */
  lookupActive(ref: DomainRef, op: string): Promise<LibvirtDomain>;
}

/** Builds the capability over a driver's libvirt connection. */
export function libvirtFsFreeze(host: FsFreezeHost): FsFreezeSupport {
  const run = async <T>(ref: DomainRef, op: string, fn: (d: LibvirtDomain) => Promise<T>): Promise<T> => {
    const dom = await host.lookupActive(ref, op);
    try {
      return await fn(dom);
    } catch (e) {
      throw mapLibvirtError(e, `domain ${dom.name}`, op);
    }
  };
  return {
    freeze: (ref) => run(ref, 'freeze filesystems', (d) => host.client().domainFSFreeze(d)),
    thaw: (ref) => run(ref, 'thaw filesystems', (d) => host.client().domainFSThaw(d)),
    status: async (ref) => {
      const reply = await run(ref, 'read the freeze status', async (d) => {
        const text = await host.client().qemuAgentCommand(d, STATUS_CMD, AGENT_TIMEOUT_SECONDS);
        return text ?? '';
      });
      let state: unknown;
      try {
        state = (JSON.parse(reply) as { return?: unknown }).return;
      } catch {
        state = undefined;
      }
      if (state === 'frozen' || state === 'thawed') return state;
      throw new DriverError(
        'Hypervisor',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: guest-fsfreeze-status answered ${JSON.stringify(reply.slice(0, 200))}`,
      );
    },
  };
}
