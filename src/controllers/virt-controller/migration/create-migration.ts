/**
 * Creating a VirtualMachineInstanceMigration on the system's behalf (upstream's evacuation
 * and workload-update controllers): the object with its generated name, annotation and
 * priority, and upstream's SuccessfulCreate / FailedCreate events on the VMI.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import type { ControllerDeps, Expectations } from '../../common/controller-ports';
import { VirtualMachineInstanceMigrationType } from '../../runtime/resources';
import type { KubeObject } from '../../runtime/types';

/** What a system-made migration is. */
export interface SystemMigration {
  /** e.g. `kubevirt-evacuation-`. */
  generateName: string;
  annotations: Record<string, string>;
  priority: 'system-critical' | 'user-triggered';
  /** Appended to the events' messages, e.g. ` for automated workload update`. */
  purpose?: string;
}

/**
 * Creates `m` for `vmi`. On failure the expected creation under `expectationKey` is
 * observed (it will not come), a FailedCreate event recorded, and the error thrown.
 */
export async function createSystemMigration(
  o: ControllerDeps & { expectations: Expectations; onWrite?: (kind: string, verb: 'create') => void },
  vmi: VirtualMachineInstance,
  m: SystemMigration,
  expectationKey: string,
): Promise<void> {
  const migration = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstanceMigration',
    metadata: {
      generateName: m.generateName,
      namespace: vmi.metadata?.namespace,
      annotations: m.annotations,
    },
    spec: { vmiName: vmi.metadata?.name, priority: m.priority },
  } as KubeObject;
  const purpose = m.purpose ?? '';
  try {
    const made = await o.client.create(VirtualMachineInstanceMigrationType, migration);
    o.onWrite?.('VirtualMachineInstanceMigration', 'create');
    o.recorder.event(
      vmi,
      'Normal',
      'SuccessfulCreate',
      `Created Migration ${made.metadata?.name ?? ''}${purpose}`,
    );
  } catch (e) {
    o.expectations.creationObserved(expectationKey);
    o.recorder.event(
      vmi,
      'Warning',
      'FailedCreate',
      `Error creating a Migration${purpose}: ${(e as Error).message}`,
    );
    throw e;
  }
}
