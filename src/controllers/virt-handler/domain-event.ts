/**
 * What a launcher's domain event is about: libvirt names a VMI's domain
 * `<namespace>_<name>` (upstream's VMINamespaceKeyFunc), so the event names the VMI to sync.
 */
import type { DomainEventNotification } from '../launcher-protocol';
import type { LauncherDomain } from '../launcher-protocol/domain-report';

/** The VMI a domain event is about, with the domain it reports and a line for the debug log. */
export interface DomainEventVmi {
  namespace: string;
  name: string;
  domain: LauncherDomain;
  summary: string;
}

/** The VMI of `ev`, or undefined for an event without a domain named `<namespace>_<name>`. */
export function domainEventVmi(ev: DomainEventNotification): DomainEventVmi | undefined {
  const d = ev.domain as LauncherDomain | null;
  const i = d?.name?.indexOf('_') ?? -1;
  if (!d?.name || i <= 0) return undefined;
  const migration = d.migration
    ? ` (migration ${d.migration.role}${d.migration.completed ? ', completed' : ''})`
    : '';
  return {
    namespace: d.name.slice(0, i),
    name: d.name.slice(i + 1),
    domain: d,
    summary: `domain event ${ev.eventType}: ${d.state ?? ''}${migration}`,
  };
}
