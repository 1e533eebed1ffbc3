/**
 * The uid of the object a virt-controller work queue key names, from the controller's
 * informer caches (no API call): for the log lines of a failed reconcile.
 */
import {
  VirtualMachineInstanceMigrationType,
  VirtualMachineInstanceReplicaSetType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../runtime/resources';
import type { ResourceType } from '../runtime/types';
import { VirtualMachinePoolType } from './pool/controller';
import type { VirtController } from './virt-controller';

const TYPES: Record<string, ResourceType> = {
  vmi: VirtualMachineInstanceType,
  vm: VirtualMachineType,
  replicaset: VirtualMachineInstanceReplicaSetType,
  migration: VirtualMachineInstanceMigrationType,
  pool: VirtualMachinePoolType,
};

/** The cached object's uid, or undefined (unknown controller, not cached). */
export function cachedUid(ctrl: VirtController, controller: string, key: string): string | undefined {
  const type = TYPES[controller];
  if (!type) return undefined;
  // informerFor hands back the controller's own shared informer for the type (same key).
  return ctrl.informers.informerFor(type).indexer.get(key)?.metadata?.uid;
}
