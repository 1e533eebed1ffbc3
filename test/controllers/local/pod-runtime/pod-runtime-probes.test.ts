/**
 * The local pod runtime runs the compute container's probes as the kubelet does: a
 * readiness probe keeps the pod's Ready condition (and the container's `ready`) False
 * until it passes and turns it False again after failureThreshold failures; a failing
 * liveness probe kills the container, so a restartPolicy Never pod fails.
 */
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pod, PodProbe } from '../../../../src/controllers/common/pod';
import { PodRuntime } from '../../../../src/controllers/local/pod-runtime/pod-runtime';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { EventType, PodType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { freePort } from '../../../support/free-port';

async function until<T>(what: string, fn: () => Promise<T | undefined | false>): Promise<T> {
  const end = Date.now() + 20_000;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const pod = (name: string, probes: { readinessProbe?: PodProbe; livenessProbe?: PodProbe }): Pod =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 2,
      readinessGates: [{ conditionType: 'kubevirt.io/virtual-machine-unpaused' }],
      containers: [{ name: 'compute', image: 'x', command: ['sh'], args: ['-c', 'sleep 60'], ...probes }],
    },
  }) as Pod;

const fast = { periodSeconds: 1, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 1 };

describe('PodRuntime probes', () => {
  let store: EmbeddedStore;
  let root: string;
  let rt: PodRuntime;
  const get = (name: string) => store.get<Pod & KubeObject>(PodType, name, 'default');
  const ready = async (name: string) => {
    const p = await get(name);
    const cond = p.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    return { phase: p.status?.phase, ready: cond, container: p.status?.containerStatuses?.[0]?.ready };
  };

  beforeEach(async () => {
    store = await EmbeddedStore.open();
    root = mkdtempSync(join(tmpdir(), 'kvts-probes-'));
    rt = new PodRuntime({
      client: store,
      nodeName: 'n1',
      root,
      bindPending: true,
      commands: { sh: ['/bin/sh'] },
      pollMs: 50,
      log: () => {},
    });
    await rt.start();
  });

  afterEach(async () => {
    await rt.stop();
    rt.killAll();
    await store.close?.();
    rmSync(root, { recursive: true, force: true });
  });

  it('an exec readiness probe gates Ready, and turns it back off when it fails', async () => {
    const mark = join(root, 'ready');
    await store.create(
      PodType,
      pod('r1', {
        readinessProbe: { exec: { command: ['sh', '-c', `test -f ${mark}`] }, ...fast },
      }) as KubeObject,
    );
    await until('Running', async () => (await get('r1')).status?.phase === 'Running');
    // Several failed attempts: still not ready.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await ready('r1')).toEqual({ phase: 'Running', ready: 'False', container: false });
    writeFileSync(mark, '');
    await until('Ready', async () => (await ready('r1')).ready === 'True');
    expect((await ready('r1')).container).toBe(true);
    unlinkSync(mark);
    await until('not Ready again', async () => (await ready('r1')).ready === 'False');
    const events = await store.list<KubeObject & { reason?: string; message?: string }>(EventType, {
      namespace: 'default',
    });
    expect(
      events.items.some((e) => e.reason === 'Unhealthy' && /Readiness probe failed/.test(e.message ?? '')),
    ).toBe(true);
  });

  it('a tcpSocket readiness probe passes once the port listens', async () => {
    const port = await freePort();
    await store.create(
      PodType,
      pod('t1', { readinessProbe: { tcpSocket: { port }, ...fast } }) as KubeObject,
    );
    await until('Running', async () => (await get('t1')).status?.phase === 'Running');
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await ready('t1')).ready).toBe('False');
    const server = net.createServer((c) => c.end()).listen(port, '127.0.0.1');
    try {
      await until('Ready', async () => (await ready('t1')).ready === 'True');
    } finally {
      server.close();
    }
  });

  it('a failing liveness probe kills the container and the pod fails', async () => {
    const mark = join(root, 'alive');
    writeFileSync(mark, '');
    await store.create(
      PodType,
      pod('l1', {
        livenessProbe: { exec: { command: ['sh', '-c', `test -f ${mark}`] }, ...fast },
      }) as KubeObject,
    );
    await until('Running', async () => (await get('l1')).status?.phase === 'Running');
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await get('l1')).status?.phase).toBe('Running');
    unlinkSync(mark);
    const failed = await until('Failed', async () => {
      const p = await get('l1');
      return p.status?.phase === 'Failed' && p;
    });
    expect(failed.status?.containerStatuses?.[0]?.state?.terminated?.exitCode).toBe(143);
    const events = await store.list<KubeObject & { reason?: string; message?: string }>(EventType, {
      namespace: 'default',
    });
    expect(events.items.map((e) => e.reason)).toContain('Killing');
  });
});
