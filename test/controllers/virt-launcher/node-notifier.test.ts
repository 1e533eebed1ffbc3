import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type DomainEventNotification, serveNotify } from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { NodeNotifier } from '../../../src/controllers/virt-launcher/node-notifier';

const vmi = { kind: 'VirtualMachineInstance' as const, namespace: 'ns', name: 'vm', uid: 'u1' };
const domain = (state: string) => ({ name: 'ns_vm', state }) as unknown as LauncherDomain;

/** Resolves once `done()` holds (checked every 20 ms), or throws after `ms`. */
async function until(done: () => boolean, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the launcher's notifier", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvts-notifier-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("delivers changes sent before the agent's pipe exists once it appears, later queued ones merged into the latest", async () => {
    const path = join(dir, 'pipe.sock');
    const logs: string[] = [];
    const n = new NodeNotifier(path, vmi, (m) => logs.push(m));
    const got: DomainEventNotification[] = [];
    n.domainEvent('ADDED', domain('paused'));
    await new Promise((r) => setImmediate(r)); // the first send is under way (waiting for the pipe)
    n.domainEvent('MODIFIED', domain('running'));
    n.domainEvent('MODIFIED', domain('shutoff'));
    await new Promise((r) => setTimeout(r, 200));
    const server = await serveNotify(path, { onDomainEvent: (e) => got.push(e) });
    try {
      await until(() => got.length >= 2);
      await n.flush(3_000);
      expect(got.map((e) => [e.eventType, (e.domain as { state: string }).state])).toEqual([
        ['ADDED', 'paused'],
        ['MODIFIED', 'shutoff'],
      ]);
      expect(logs).toEqual([]);
    } finally {
      n.close();
      await server.close();
    }
  });

  it('keeps an ADDED the agent has not seen when a change replaces it', async () => {
    const path = join(dir, 'pipe.sock');
    const got: DomainEventNotification[] = [];
    const server = await serveNotify(path, { onDomainEvent: (e) => got.push(e) });
    const n = new NodeNotifier(path, vmi, () => undefined);
    try {
      n.domainEvent('ADDED', domain('paused'));
      n.domainEvent('MODIFIED', domain('running'));
      await n.flush(3_000);
      expect(got.map((e) => [e.eventType, (e.domain as { state: string }).state])).toEqual([
        ['ADDED', 'running'],
      ]);
    } finally {
      n.close();
      await server.close();
    }
  });

  it('waits at most 100 ms in flush while no agent is connected', async () => {
    const n = new NodeNotifier(join(dir, 'none.sock'), vmi, () => undefined);
    try {
      n.domainEvent('MODIFIED', domain('shutoff'));
      const t0 = performance.now();
      await n.flush(2_000);
      expect(performance.now() - t0).toBeLessThan(500);
    } finally {
      n.close();
    }
  });

  it('logs when the agent stops taking events and when it takes them again', async () => {
    const path = join(dir, 'pipe.sock');
    const logs: string[] = [];
    const n = new NodeNotifier(path, vmi, (m) => logs.push(m));
    n.k8sEvent('Normal', 'Started', 'one');
    await until(() => logs.length > 0);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^notify: the node agent did not take an event \(.*DEADLINE_EXCEEDED/);
    const server = await serveNotify(path, { onDomainEvent: () => undefined, onK8sEvent: () => undefined });
    try {
      n.k8sEvent('Normal', 'Started', 'two');
      await until(() => logs.length > 1);
      expect(logs[1]).toBe('notify: the node agent answers again (1 event(s) were not delivered)');
    } finally {
      n.close();
      await server.close();
    }
  }, 10_000);
});
