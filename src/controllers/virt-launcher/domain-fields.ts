/**
 * The domain's own part of what GetDomain answers (the launcher adds the guest agent's,
 * endpoints', migration's and network's parts).
 */
import type { DomainInfo } from '../../drivers/driver';
import type { LauncherDomain } from '../launcher-protocol/domain-report';

/** The domain as last seen; once it is gone, shut off and destroyed. */
export function domainFields(
  name: string,
  vmiUid: string,
  d: DomainInfo | undefined,
  finished: boolean,
): LauncherDomain {
  return {
    name,
    uuid: d?.uuid ?? '',
    state: d?.state ?? 'shutoff',
    reason: d?.reason ?? 'destroyed',
    bootId: d?.bootId ?? '',
    vcpus: d?.vcpus ?? 0,
    memoryKiB: d?.memoryKiB ?? 0,
    vmiUid,
    finished,
  };
}
