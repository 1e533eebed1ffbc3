/**
 * Operations on one running guest that local mode asks its node agent for directly (on a
 * cluster, virt-api reaches the same launcher calls through the handler's REST server).
 */
import type { VirtHandler } from './handler';

type Node = Pick<VirtHandler, 'launcherOf' | 'requeue'>;

/** Pauses a running guest; the VMI gets the Paused condition at the sync queued here. */
export async function pauseVmi(node: Node, namespace: string, name: string): Promise<void> {
  const { vmi, client } = await node.launcherOf(namespace, name);
  await client.pauseVirtualMachine(vmi);
  node.requeue(namespace, name);
}

/** Resumes a paused guest. */
export async function unpauseVmi(node: Node, namespace: string, name: string): Promise<void> {
  const { vmi, client } = await node.launcherOf(namespace, name);
  await client.unpauseVirtualMachine(vmi);
  node.requeue(namespace, name);
}

/** Asks the guest to reboot itself (ACPI). */
export async function softRebootVmi(node: Node, namespace: string, name: string): Promise<void> {
  const { vmi, client } = await node.launcherOf(namespace, name);
  await client.softRebootVirtualMachine(vmi);
}
