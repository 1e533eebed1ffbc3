/**
 * Stopping and removing a domain (the driver's `shutdown` and `delete`): a graceful ACPI
 * shutdown polled until the domain is off, then a destroy; and a destroy plus an undefine
 * that also removes NVRAM where the daemon supports the flag.
 */
import { type DomainRef, domainName, type ShutdownOptions } from '../driver';
import {
  type LibvirtClient,
  LibvirtError,
  UndefineFlags,
  VIR_ERR_ARGUMENT_UNSUPPORTED,
  VIR_ERR_INVALID_ARG,
  VIR_ERR_NO_DOMAIN,
  VIR_ERR_NO_SUPPORT,
  VIR_ERR_OPERATION_INVALID,
} from '../libvirt';
import type { LibvirtDomains } from './domains';
import { stateName } from './states';

/** Shuts `ref` down within `options.graceSeconds` (polled every `pollMs`), else destroys it. */
export async function shutdownDomain(
  client: LibvirtClient,
  domains: LibvirtDomains,
  ref: DomainRef,
  options: ShutdownOptions,
  pollMs: number,
): Promise<void> {
  const dom = await domains.mustLookupActive(ref, 'shut down');
  if (options.graceSeconds > 0) {
    await domains.call(dom.name, 'shutdown', () => client.domainShutdown(dom));
    const deadline = Date.now() + options.graceSeconds * 1000;
    while (Date.now() < deadline) {
      const st = await domains.call(dom.name, 'shutdown', () => client.domainGetState(dom));
      if (stateName(st.state) === 'shutoff') return;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }
  try {
    await client.domainDestroy(dom);
  } catch (e) {
    // It may have powered off between the last look and the destroy.
    if (e instanceof LibvirtError && e.code === VIR_ERR_OPERATION_INVALID) return;
    throw domains.mapError(e, dom.name, 'shutdown (kill after grace period)');
  }
}

/** Stops (if running) and undefines `ref`'s domain; nothing when there is none. */
export async function deleteDomain(
  client: LibvirtClient,
  domains: LibvirtDomains,
  ref: DomainRef,
): Promise<void> {
  const name = domainName(ref);
  const dom = await domains.lookup(name);
  if (!dom) return;
  try {
    await client.domainDestroy(dom);
  } catch (e) {
    const gone =
      e instanceof LibvirtError && (e.code === VIR_ERR_OPERATION_INVALID || e.code === VIR_ERR_NO_DOMAIN);
    if (!gone) throw domains.mapError(e, name, 'delete (stop)');
  }
  try {
    await client.domainUndefine(dom, UndefineFlags.NVRAM);
  } catch (e) {
    if (e instanceof LibvirtError && e.code === VIR_ERR_NO_DOMAIN) return;
    const unsupportedFlag =
      e instanceof LibvirtError &&
      [VIR_ERR_INVALID_ARG, VIR_ERR_ARGUMENT_UNSUPPORTED, VIR_ERR_NO_SUPPORT].includes(e.code);
    if (!unsupportedFlag) throw domains.mapError(e, name, 'delete (undefine)');
    // Drivers without NVRAM support (libvirt's test driver) refuse the flag.
    await domains.call(name, 'delete (undefine)', () => client.domainUndefine(dom));
  }
}
