/**
 * The launcher calls behind a node's per-VMI PUT subresources. The handler's REST server
 * serves them to virt-api (rest-server.ts); local mode's API calls them directly, through
 * {@link onGuest}.
 */
import type { LauncherClient } from '../launcher-protocol/client';
import type { VirtHandler } from './handler';

/** A VMI's launcher on this node, as `VirtHandler.launcherOf` finds it. */
export interface GuestLauncher {
  vmi: unknown;
  client: LauncherClient;
}

/** Each operation's launcher call. */
export const GuestCalls = {
  pause: ({ vmi, client }: GuestLauncher) => client.pauseVirtualMachine(vmi),
  unpause: ({ vmi, client }: GuestLauncher) => client.unpauseVirtualMachine(vmi),
  softreboot: ({ vmi, client }: GuestLauncher) => client.softRebootVirtualMachine(vmi),
  reset: ({ vmi, client }: GuestLauncher) => client.resetVirtualMachine(vmi),
} as const;

/**
 * Runs `op` on the guest of the VMI `namespace/name` on this node, then queues the VMI for a
 * sync, so that the status shows the effect (the Paused condition) without waiting for
 * the next resync.
 */
export async function onGuest(
  node: Pick<VirtHandler, 'launcherOf' | 'requeue'>,
  namespace: string,
  name: string,
  op: keyof typeof GuestCalls,
): Promise<void> {
  await GuestCalls[op](await node.launcherOf(namespace, name));
  node.requeue(namespace, name);
}

/**
 * Freezes the guest filesystems of the VMI `namespace/name` on this node through its guest
 * agent (the launcher's FreezeVirtualMachine, what the handler's `freeze` subresource
 * runs); the launcher thaws them itself after `unfreezeTimeoutSeconds` (0: never).
 */
export async function freezeGuest(
  node: Pick<VirtHandler, 'launcherOf'>,
  namespace: string,
  name: string,
  unfreezeTimeoutSeconds: number,
): Promise<void> {
  const { vmi, client } = await node.launcherOf(namespace, name);
  await client.freezeVirtualMachine(vmi, unfreezeTimeoutSeconds);
}

/** Thaws the guest filesystems of the VMI `namespace/name` on this node (the `unfreeze` subresource's call). */
export async function thawGuest(
  node: Pick<VirtHandler, 'launcherOf'>,
  namespace: string,
  name: string,
): Promise<void> {
  const { vmi, client } = await node.launcherOf(namespace, name);
  await client.unfreezeVirtualMachine(vmi);
}
