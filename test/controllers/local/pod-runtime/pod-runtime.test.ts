/**
 * The local pod runtime on the embedded store with a plain shell command as the
 * container: binds a pending pod, runs it with the pod's env and emptyDirs in kubelet's
 * layout, reports Running then Succeeded/Failed with the exit code, adopts a
 * running process after its own restart (same pid), and stops a deleted pod with SIGTERM.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../../src/controllers/common/pod';
import { PodRuntime } from '../../../../src/controllers/local/pod-runtime/pod-runtime';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { NotFoundError } from '../../../../src/controllers/runtime/errors';
import { NodeType, PodType, SecretType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
): Promise<T> {
  const end = Date.now() + 20_000;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch {
      // retry
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const pod = (name: string, script: string): Pod =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 5,
      containers: [
        {
          name: 'compute',
          image: 'x',
          command: ['sh'],
          args: ['-c', script],
          env: [
            { name: 'GREETING', value: 'hello' },
            { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          ],
          volumeMounts: [{ name: 'sockets', mountPath: '/var/run/kubevirt/sockets' }],
        },
      ],
      volumes: [{ name: 'sockets', emptyDir: {} }],
    },
  }) as Pod;

describe('PodRuntime on the embedded store', () => {
  let store: EmbeddedStore;
  let root: string;
  let rt: PodRuntime;
  const newRuntime = () =>
    new PodRuntime({
      client: store,
      nodeName: 'n1',
      root,
      bindPending: true,
      commands: { sh: ['/bin/sh'] },
      pollMs: 50,
      volumeSyncMs: 50,
      log: () => {},
    });
  const get = (name: string) => store.get<Pod & KubeObject>(PodType, name, 'default');

  beforeEach(async () => {
    store = await EmbeddedStore.open();
    root = mkdtempSync(join(tmpdir(), 'kvts-podrt-'));
    rt = newRuntime();
    await rt.start();
  });

  afterEach(async () => {
    await rt.stop();
    rt.killAll();
    await store.close?.();
    rmSync(root, { recursive: true, force: true });
  });

  it('registers a Ready node, binds, runs with env and emptyDirs, and reports Succeeded', async () => {
    const node = await store.get<
      KubeObject & { status?: { conditions?: Array<{ type: string; status: string }> } }
    >(NodeType, 'n1');
    expect(node.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    );
    await store.create(
      PodType,
      pod('p1', 'echo "$GREETING $POD_NAME $KUBEVIRT_TS_MOUNTS" > out.txt; exit 0') as KubeObject,
    );
    const done = await until('p1 Succeeded', async () =>
      (await get('p1')).status?.phase === 'Succeeded' ? get('p1') : undefined,
    );
    expect(done.spec?.nodeName).toBe('n1');
    expect(done.status?.containerStatuses?.[0].state?.terminated).toMatchObject({
      exitCode: 0,
      reason: 'Completed',
    });
    const uid = done.metadata?.uid ?? '';
    const out = readFileSync(join(root, uid, 'out.txt'), 'utf8');
    const sockets = join(root, uid, 'volumes', 'kubernetes.io~empty-dir', 'sockets');
    // The termination message file is the pod directory's, as the kubelet mounts it.
    const termination = join(root, uid, 'termination-log');
    expect(out.trim()).toBe(
      `hello p1 ${JSON.stringify({ '/var/run/kubevirt/sockets': sockets, '/dev/termination-log': termination })}`,
    );
    expect(existsSync(sockets)).toBe(true);
  });

  it("rewrites a running pod's secret volume when the Secret changes, as kubelet does", async () => {
    const b64 = (t: string) => Buffer.from(t).toString('base64');
    await store.create(SecretType, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's1', namespace: 'default' },
      data: { a: b64('one'), gone: b64('x') },
    } as KubeObject);
    const p = pod('p3', 'sleep 30');
    p.spec!.volumes!.push({ name: 'creds', secret: { secretName: 's1' } });
    await store.create(PodType, p as KubeObject);
    const running = await until('p3 Running', async () =>
      (await get('p3')).status?.phase === 'Running' ? get('p3') : undefined,
    );
    const dir = join(root, running.metadata?.uid ?? '', 'volumes', 'kubernetes.io~secret', 'creds');
    expect(readFileSync(join(dir, 'a'), 'utf8')).toBe('one');
    const first = readdirSync(dir).filter((n) => n.startsWith('..2'));
    await store.patch(
      SecretType,
      's1',
      { data: { a: b64('two'), b: b64('new'), gone: null } },
      {
        type: 'merge',
        namespace: 'default',
      },
    );
    // The writer swaps `..data` first and removes the old payload after, as kubelet's does:
    // the update is whole once the old payload directory is gone.
    await until(
      'the new Secret in the volume, the old payload removed',
      () =>
        existsSync(join(dir, 'b')) &&
        readFileSync(join(dir, 'a'), 'utf8') === 'two' &&
        !first.some((n) => existsSync(join(dir, n))),
    );
    expect(readFileSync(join(dir, 'b'), 'utf8')).toBe('new');
    // The old payload and the link of the removed key are gone; an unchanged Secret writes nothing.
    expect(existsSync(join(dir, 'gone'))).toBe(false);
    const now = readdirSync(dir).filter((n) => n.startsWith('..2'));
    expect(now).toHaveLength(1);
    expect(now).not.toEqual(first);
    await new Promise((r) => setTimeout(r, 200));
    expect(readdirSync(dir).filter((n) => n.startsWith('..2'))).toEqual(now);
  });

  it('reports a failing container as Failed with its exit code', async () => {
    await store.create(PodType, pod('p2', 'echo boom >&2; exit 3') as KubeObject);
    const p = await until('p2 Failed', async () =>
      (await get('p2')).status?.phase === 'Failed' ? get('p2') : undefined,
    );
    expect(p.status?.containerStatuses?.[0].state?.terminated).toMatchObject({
      exitCode: 3,
      reason: 'Error',
    });
  });

  it('adopts a running process after a restart, and stops a deleted pod with SIGTERM', async () => {
    await store.create(
      PodType,
      pod('p3', 'trap "echo term > term.txt; exit 0" TERM; while :; do sleep 0.05; done') as KubeObject,
    );
    const p = await until('p3 Running', async () =>
      (await get('p3')).status?.phase === 'Running' ? get('p3') : undefined,
    );
    const uid = p.metadata?.uid ?? '';
    const pid = await until('a pid', () => rt.pidOf(uid));
    await rt.stop();
    rt = newRuntime();
    await rt.start();
    expect(await until('adopted', () => rt.pidOf(uid))).toBe(pid);
    await store.delete(PodType, 'p3', { namespace: 'default' });
    await until('p3 gone', async () => {
      try {
        await get('p3');
        return false;
      } catch (e) {
        return e instanceof NotFoundError;
      }
    });
    await until('the process stopped', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    await until('the pod dir removed', () => !existsSync(join(root, uid)));
  });
});
