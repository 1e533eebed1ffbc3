/**
 * The launcher's start-up step lines: a step with its time, the domain sync with its
 * outcome, and the capabilities probe started ahead of the first sync (on the in-memory
 * fake driver, whose probe and sync are real code paths without QEMU).
 */
import { describe, expect, it } from 'vitest';
import {
  probeAhead,
  timedStep,
  withLoggedSync,
} from '../../../src/controllers/virt-launcher/start-steps-log';
import { FakeDriver } from '../../../src/drivers/fake/index';
import { waitFor } from '../../support/wait';
import { defaultedLauncherVmi } from './tiny-guest-vmi';

const vmi = defaultedLauncherVmi('kvts-steps', 'steps', 'uid-steps', {
  domain: { devices: { autoattachPodInterface: false }, resources: { requests: { memory: '64Mi' } } },
});

describe('launcher start-up step log', () => {
  it('logs a step with the milliseconds it took and passes its value through', async () => {
    const lines: string[] = [];
    const v = await timedStep(
      (m) => lines.push(m),
      'volumes prepared',
      async () => 42,
    );
    expect(v).toBe(42);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^volumes prepared \(\d+ ms\)$/);
  });

  it('logs nothing for a step that fails, and the failure reaches the caller', async () => {
    const lines: string[] = [];
    await expect(
      timedStep(
        (m) => lines.push(m),
        'x',
        async () => {
          throw new Error('boom');
        },
      ),
    ).rejects.toThrow('boom');
    expect(lines).toEqual([]);
  });

  it('logs each domain sync with the state it left the domain in', async () => {
    const lines: string[] = [];
    const driver = withLoggedSync(new FakeDriver(), (m) => lines.push(m));
    const info = await driver.sync(vmi, { useEmulation: true });
    expect(info.state).toBe('running');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^domain synced: running \(\d+ ms\)$/);
  });

  it('probes the capabilities ahead and logs when they are in', async () => {
    const lines: string[] = [];
    probeAhead(new FakeDriver(), (m) => lines.push(m));
    const line = await waitFor('the probe line', () => lines[0], 5_000, 5);
    expect(line).toMatch(/^hypervisor capabilities probed \(\d+ ms\)$/);
  });

  it('logs a failed probe instead of throwing', async () => {
    const lines: string[] = [];
    const driver = new FakeDriver();
    driver.probe = async () => {
      throw new Error('no QEMU');
    };
    probeAhead(driver, (m) => lines.push(m));
    const line = await waitFor('the failure line', () => lines[0], 5_000, 5);
    expect(line).toBe("probing the hypervisor's capabilities: no QEMU");
  });
});
