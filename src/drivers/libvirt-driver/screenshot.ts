/** The libvirt driver's screenshot: virDomainScreenshot of the domain's first screen. */
import type { DomainRef, Screenshot } from '../driver';
import type { LibvirtClient, DomainRef as LibvirtDomain } from '../libvirt';
import { mapLibvirtError } from './error-map';

/** Captures the first screen of the running domain `ref` names. */
export async function libvirtScreenshot(
  client: LibvirtClient,
  lookupActive: (ref: DomainRef, op: string) => Promise<LibvirtDomain>,
  ref: DomainRef,
): Promise<Screenshot> {
  const dom = await lookupActive(ref, 'take a screenshot');
  try {
    return await client.domainScreenshot(dom, { screen: 0 });
  } catch (e) {
    throw mapLibvirtError(e, `domain ${dom.name}`, 'take a screenshot');
  }
}
