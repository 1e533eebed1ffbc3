/**
 * The target's domain XML on its way to the source (a kubevirt-ts deviation: launcher pods
 * here do not share one path layout, so the target launcher renders the domain for its own
 * pod): the target node's handler publishes what its launcher prepared as an annotation on
 * the target pod, and the source node's handler reads it from there to send as the
 * migration's `TargetDomainXML`. Apart from ./migration-sync.ts, whose state machine only
 * says when each side does this.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceMigrationState } from '../../api/generated/types';
import { MigrationLabels } from '../common/migration-labels';
import type { Pod } from '../common/pod';
import { NotFoundError } from '../runtime/errors';
import { PodType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

/** Annotation on a migration target pod: the domain XML its launcher prepared (kubevirt-ts). */
export const TARGET_DOMAIN_ANNOTATION = 'kubevirt-ts.io/migration-target-domain';

/** Target side: puts `xml` (what the target launcher wrote, if anything) on `pod` unless it is there. */
export async function publishTargetDomainXml(
  client: ObjectClient,
  pod: Pod,
  xml: string | undefined,
): Promise<void> {
  if (!xml || pod.metadata?.annotations?.[TARGET_DOMAIN_ANNOTATION] === xml) return;
  const fresh = await client.get<Pod & KubeObject>(
    PodType,
    pod.metadata?.name ?? '',
    pod.metadata?.namespace,
  );
  if (fresh.metadata?.annotations?.[TARGET_DOMAIN_ANNOTATION] === xml) return;
  fresh.metadata = {
    ...fresh.metadata,
    annotations: { ...(fresh.metadata?.annotations ?? {}), [TARGET_DOMAIN_ANNOTATION]: xml },
  };
  await client.update(PodType, fresh);
}

/**
 * Source side: the target's domain XML from the target pod: '' when the target publishes
 * none (the source's own definition is sent), null while it is not there yet.
 */
export async function targetDomainXml(
  client: ObjectClient,
  vmi: VirtualMachineInstance,
  ms: VirtualMachineInstanceMigrationState,
): Promise<string | null> {
  if (!ms.targetPod) return '';
  try {
    const pod = await client.get<Pod & KubeObject>(PodType, ms.targetPod, vmi.metadata?.namespace);
    if (pod.metadata?.labels?.[MigrationLabels.jobUid] !== ms.migrationUid) return '';
    return pod.metadata?.annotations?.[TARGET_DOMAIN_ANNOTATION] ?? null;
  } catch (e) {
    if (e instanceof NotFoundError) return '';
    throw e;
  }
}
