/**
 * The libvirt driver's (./libvirt-driver) access to its own domains: looking one up by the
 * name a VMI gives it (`<namespace>_<name>`), requiring it running or paused, reading its
 * state as a `DomainInfo`, and making a call with libvirt's errors mapped to `DriverError`.
 */
import { type DomainInfo, type DomainRef, domainName } from '../driver';
import { DriverError } from '../errors';
import {
  type LibvirtClient,
  type DomainRef as LibvirtDomain,
  LibvirtError,
  VIR_ERR_NO_DOMAIN,
} from '../libvirt';
import { mapLibvirtError } from './error-map';
import { reasonName, stateName } from './states';

/** The names of the domains this driver manages: `<namespace>_<name>`. */
export const DOMAIN_NAME_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)_(.+)$/;

/** Domain look-ups and calls of one driver (`driverName` names it in host-level errors). */
export class LibvirtDomains {
  constructor(
    private readonly client: LibvirtClient,
    private readonly driverName: string,
  ) {}

  /** The domain named `name`, or undefined when libvirt has none. */
  async lookup(name: string): Promise<LibvirtDomain | undefined> {
    try {
      return await this.client.domainLookupByName(name);
    } catch (e) {
      if (e instanceof LibvirtError && e.code === VIR_ERR_NO_DOMAIN) return undefined;
      throw this.mapError(e, name, 'look up');
    }
  }

  /** The domain of `ref`; `DriverError('NotFound')` when there is none. */
  async mustLookup(ref: DomainRef): Promise<LibvirtDomain> {
    const name = domainName(ref);
    const dom = await this.lookup(name);
    if (!dom) {
      throw new DriverError(
        'NotFound',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain ${name} on this host`,
      );
    }
    return dom;
  }

  /** Looks the domain up and requires it running or paused (drivers differ in how they refuse otherwise). */
  async mustLookupActive(ref: DomainRef, op: string): Promise<LibvirtDomain> {
    const dom = await this.mustLookup(ref);
    const st = await this.call(dom.name, op, () => this.client.domainGetState(dom));
    const state = stateName(st.state);
    if (state === 'shutoff' || state === 'crashed') {
      throw new DriverError(
        'InvalidState',
        `domain ${dom.name}: cannot ${op}, it is ${state} (start it first)`,
      );
    }
    return dom;
  }

  /** State, reason, size and boot id of `dom`. */
  async info(dom: LibvirtDomain): Promise<DomainInfo> {
    const [st, info] = await Promise.all([
      this.call(dom.name, 'read state', () => this.client.domainGetState(dom)),
      this.call(dom.name, 'read info', () => this.client.domainGetInfo(dom)),
    ]);
    const state = stateName(st.state);
    const m = DOMAIN_NAME_RE.exec(dom.name);
    // The id changes on every start, so uuid/id names one boot of the domain.
    const id = state === 'shutoff' || state === 'crashed' ? -1 : dom.id;
    return {
      name: dom.name,
      uuid: dom.uuid,
      state,
      reason: reasonName(state, st.reason),
      vmi: m ? { namespace: m[1], name: m[3] } : undefined,
      vcpus: info.nrVirtCpu,
      memoryKiB: info.maxMem,
      bootId: id >= 0 ? `${dom.uuid}/${id}` : '',
    };
  }

  /** Runs `fn`, mapping a libvirt failure to a `DriverError` about domain `name` (`host`: the driver). */
  async call<T>(name: string, op: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw this.mapError(e, name, op);
    }
  }

  /** `e` as a `DriverError` about domain `name` (`host`: the driver itself) failing `op`. */
  mapError(e: unknown, name: string, op: string): DriverError {
    return mapLibvirtError(e, name === 'host' ? `${this.driverName} driver` : `domain ${name}`, op);
  }
}
