/**
 * The daemon going away under an open connection, against a private libvirtd this test
 * starts and stops (never the shared one): with reconnect on, the client reconnects,
 * reopens the URI and re-registers event subscriptions; with it off, or once retries are
 * exhausted, every call fails with a clear `LibvirtConnectionError`; a frozen daemon is
 * detected by keepalive. Nothing may hang: each outcome is awaited, not timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ClientState,
  LibvirtClient,
  LibvirtConnectionError,
  LifecycleEvent,
} from '../../../src/drivers/libvirt';
import { integration } from '../../support/integration';
import { PrivateDaemon, privateDaemonUnavailable } from './private-daemon';
import { tinyDomainXML } from './support';

const why = privateDaemonUnavailable();
const run = integration('private libvirtd', why === null, why ?? '');

/** Resolves on the next time the client enters `state`. */
function nextState(c: LibvirtClient, state: ClientState): Promise<void> {
  return new Promise((resolve) => c.onStateChange((s) => s === state && resolve()));
}

describe.skipIf(!run)('daemon restart under an open connection', { timeout: 120_000 }, () => {
  const daemon = new PrivateDaemon();
  beforeAll(async () => {
    await daemon.start();
  });
  afterAll(async () => {
    await daemon.dispose();
  });

  it('reconnects, reopens the URI and keeps event subscriptions working', async () => {
    const c = await LibvirtClient.connect({
      uri: 'test:///default',
      socketPath: daemon.socketPath,
      reconnect: { initialDelayMs: 50, maxDelayMs: 500, maxAttempts: 200 },
    });
    try {
      expect(await c.getType()).toBe('TEST');
      const events = await c.domainEvents('lifecycle');
      const lost = nextState(c, 'reconnecting');
      const back = nextState(c, 'open');
      await daemon.stop();
      await lost;
      expect(c.connectionState).toBe('reconnecting');
      // A call made while the daemon is down waits for the reconnection, then succeeds.
      const pending = c.getType();
      await daemon.start();
      expect(await pending).toBe('TEST');
      await back;
      expect(c.connectionState).toBe('open');
      // The subscription was registered again on the new connection.
      const dom = await c.domainDefineXML(tinyDomainXML('kvts-test-libvirt-reconnect', 'test'));
      const ev = await events.next();
      expect(ev.done).toBe(false);
      expect(ev.value?.dom.name).toBe('kvts-test-libvirt-reconnect');
      expect(ev.value?.event).toBe(LifecycleEvent.DEFINED);
      await c.domainUndefine(dom);
      await events.close();
    } finally {
      await c.close();
    }
  });

  it('without reconnect, fails the call in flight and every later call with a clear error', async () => {
    const c = await LibvirtClient.connect({ uri: 'test:///default', socketPath: daemon.socketPath });
    const closed = nextState(c, 'closed');
    const events = await c.domainEvents('lifecycle');
    await daemon.stop('SIGKILL');
    await closed;
    const err = await c.getType().catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtConnectionError);
    expect(err.reason).toBe('closed');
    expect(err.message).toContain(daemon.socketPath);
    // The event stream ends with the same error instead of waiting forever.
    await expect(events.next()).rejects.toBeInstanceOf(LibvirtConnectionError);
    await c.close();
    await daemon.start();
  });

  it('gives up after maxAttempts with an error that says so', async () => {
    const c = await LibvirtClient.connect({
      uri: 'test:///default',
      socketPath: daemon.socketPath,
      reconnect: { initialDelayMs: 10, maxDelayMs: 20, maxAttempts: 3 },
    });
    const closed = nextState(c, 'closed');
    await daemon.stop();
    await closed;
    const err = await c.getType().catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtConnectionError);
    expect(err.message).toMatch(/could not reconnect after 3 attempts/);
    await c.close();
    await daemon.start();
  });

  it('detects a frozen daemon by keepalive and fails the pending call', async () => {
    const c = await LibvirtClient.connect({
      uri: 'test:///default',
      socketPath: daemon.socketPath,
      // Dead after 2 s of silence: loose enough that a loaded daemon is not mistaken for a frozen one.
      keepalive: { intervalMs: 250, count: 8 },
    });
    expect(await c.getType()).toBe('TEST');
    daemon.pause();
    try {
      const err = await c.getType().catch((e) => e);
      expect(err).toBeInstanceOf(LibvirtConnectionError);
      expect(err.reason).toBe('keepalive-timeout');
      expect(err.message).toMatch(/stopped answering/);
    } finally {
      daemon.resume();
      await c.close();
    }
  });
});
