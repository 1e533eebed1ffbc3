/**
 * The launcher's FreezeVirtualMachine refuses an unfreeze timeout its safety-thaw timer
 * cannot hold (over 2147483 s): such a timer would fire after 1 ms and thaw the guest at
 * once. The largest one it takes keeps the guest frozen.
 */
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { LauncherRpcError } from '../../../src/controllers/launcher-protocol/rpc-error';
import { LauncherGuestOps } from '../../../src/controllers/virt-launcher/freeze-screenshot-rpcs';
import type { HypervisorDriver } from '../../../src/drivers/driver';

function ops(filesystems = 1) {
  const fsCalls: string[] = [];
  const logs: string[] = [];
  let frozen = false;
  const driver = {
    name: 'fake',
    fsFreeze: {
      freeze: async () => {
        fsCalls.push('freeze');
        // qemu-ga stays thawed when it froze nothing.
        frozen = filesystems > 0;
        return filesystems;
      },
      thaw: async () => {
        fsCalls.push('thaw');
        frozen = false;
        return 1;
      },
      status: async () => (frozen ? 'frozen' : 'thawed'),
    },
  } as unknown as HypervisorDriver;
  const g = new LauncherGuestOps(
    () => driver,
    () => ({ namespace: 'ns', name: 'v' }) as never,
    (m: string) => logs.push(m),
  );
  return { g, fsCalls, logs };
}
const vmi = {} as VirtualMachineInstance;

describe('launcher freeze: unfreeze timeout range', () => {
  it('refuses 2147484 s and 2^31 s with INVALID_ARGUMENT, freezing nothing', async () => {
    const { g, fsCalls } = ops();
    for (const s of [2_147_484, 2 ** 31]) {
      const e = await g.freeze(vmi, s).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(LauncherRpcError);
      expect((e as LauncherRpcError).code).toBe(status.INVALID_ARGUMENT);
      expect((e as Error).message).toMatch(/unfreezeTimeoutSeconds .*2147483/);
    }
    expect(fsCalls).toEqual([]);
  });

  it('keeps the guest frozen under the largest timeout (no 1 ms thaw)', async () => {
    const { g, fsCalls } = ops();
    await g.freeze(vmi, 2_147_483);
    await new Promise((r) => setTimeout(r, 50));
    expect(fsCalls).toEqual(['freeze']);
    expect(g.frozen).toBe(true);
    await g.unfreeze(vmi);
  });
});

describe('launcher freeze: the window in its log', () => {
  it('logs froze and thawed; a guest with nothing to freeze logs its unfreeze all the same', async () => {
    const one = ops();
    await one.g.freeze(vmi, 60);
    await one.g.unfreeze(vmi);
    expect(one.logs).toEqual(['froze 1 guest filesystem(s)', 'thawed 1 guest filesystem(s)']);
    const none = ops(0);
    await none.g.freeze(vmi, 60);
    expect(none.g.frozen).toBe(true);
    await none.g.unfreeze(vmi);
    expect(none.g.frozen).toBe(false);
    expect(none.fsCalls).toEqual(['freeze']);
    expect(none.logs).toEqual([
      'froze 0 guest filesystem(s)',
      'unfroze: the guest agent reports its filesystems thawed already',
    ]);
    // An unfreeze with no freeze before it is no window: nothing logged.
    const idle = ops();
    await idle.g.unfreeze(vmi);
    expect(idle.logs).toEqual([]);
  });
});
