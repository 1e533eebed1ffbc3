/**
 * The lookups of upstream's migration create admitter (migration-create-admitter.go):
 * the VMI must exist and not be final, must not carry `LiveMigratable=False` (refused
 * with its reason and message), and no other migration of it may be in flight.
 */
import type { FieldError } from '../../api/errors';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../api/generated/types';
import { NotFoundError } from '../runtime/errors';
import { VirtualMachineInstanceMigrationType, VirtualMachineInstanceType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

const FINAL = new Set(['Succeeded', 'Failed']);

/** Why a new migration of its VMI is refused (at most one error), else []. */
export async function migrationCreateErrors(
  migration: VirtualMachineInstanceMigration,
  client: ObjectClient,
): Promise<FieldError[]> {
  const ns = migration.metadata?.namespace;
  const name = migration.spec?.vmiName;
  if (!name) return []; // the schema validation names the missing field
  const field = 'spec.vmiName';
  let vmi: VirtualMachineInstance;
  try {
    vmi = await client.get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, name, ns);
  } catch (e) {
    if (e instanceof NotFoundError)
      return [{ path: field, message: `the VMI "${ns}/${name}" does not exist` }];
    throw e;
  }
  if (FINAL.has(vmi.status?.phase ?? '')) {
    return [{ path: field, message: 'Cannot migrate VMI in finalized state.' }];
  }
  const decentralized = !!(migration.spec.sendTo || migration.spec.receive);
  for (const c of vmi.status?.conditions ?? []) {
    if (c.type !== 'LiveMigratable' || c.status !== 'False') continue;
    // Upstream lets cross-namespace/cluster migrations move non-migratable disks.
    if (c.reason === 'DisksNotLiveMigratable' && decentralized) continue;
    return [{ path: field, message: `Cannot migrate VMI, Reason: ${c.reason}, Message: ${c.message}` }];
  }
  const others = await client.list<VirtualMachineInstanceMigration & KubeObject>(
    VirtualMachineInstanceMigrationType,
    { namespace: ns },
  );
  for (const m of others.items) {
    if (m.spec?.vmiName !== name || FINAL.has(m.status?.phase ?? '')) continue;
    if (m.metadata?.uid && m.metadata.uid === migration.metadata?.uid) continue;
    return [
      {
        path: field,
        message: `in-flight migration detected. Active migration job (${m.metadata?.uid}) is currently already in progress for VMI ${name}.`,
      },
    ];
  }
  return [];
}
