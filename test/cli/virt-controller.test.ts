/**
 * `kubevirt-ts virt-controller` as a shipped process against a real API server: bad flags
 * exit 1 naming the flag; two replicas elect one leader on the `virt-controller` Lease
 * (both /leader answer 200, as upstream's, only the leader's body says it leads); the leader creates the launcher pod
 * of a VMI with the --launcher-image given; when the leader is killed, the other takes
 * the Lease and reconciles.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { crdsDir } from '../../scripts/gen-crds';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { KubeVirtType, LeaseType, PodType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { networkAttachmentDefinitionCrd } from '../../src/controllers/virt-operator/components/nad-crd';
import { freePort } from '../support/free-port';
import { integration } from '../support/integration';
import { available, kubeBinDir, sharedControlPlane, unavailableReason } from '../support/kube';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const kubectl = path.join(kubeBinDir, 'kubectl');
const tsx = path.join(repoRoot, 'node_modules', '.bin', 'tsx');
const entry = path.join(repoRoot, 'src', 'cli', 'kubevirt-ts.ts');
const run = integration(
  'virt-controller process against an API server',
  available() && existsSync(kubectl) && existsSync(tsx),
  !available() ? unavailableReason : `kubectl (${kubectl}) or tsx missing`,
);

/** The controllers' stderr, for a failure message. */
const logsOf = (ps: Array<{ log: string[] }>) => ps.map((p) => p.log.join('').slice(-2000)).join('\n---\n');

async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  ms = 60_000,
  logs: () => string = () => '',
): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${logs()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function status(port: number, p: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}${p}`);
  await res.text();
  return res.status;
}

/** `/leader`'s answer (upstream's: 200 on every replica, the body says which leads), or undefined when it gives another status. */
async function leads(port: number): Promise<boolean | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/leader`);
  const body = await res.text();
  if (res.status !== 200) return undefined;
  return (JSON.parse(body) as { apiserver: { leader: string } }).apiserver.leader === 'true';
}

describe.runIf(run)('kubevirt-ts virt-controller', () => {
  const ns = `kvts-vc-${process.pid}`;
  let kubeconfig = '';
  let client: KubeClient;
  const procs: Array<{ child: ChildProcess; port: number; log: string[] }> = [];

  const start = async (extra: string[] = []) => {
    const port = await freePort();
    const log: string[] = [];
    // node itself (tsx as a loader), so killing the child kills the controller.
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        entry,
        'virt-controller',
        '--kubeconfig',
        kubeconfig,
        '--launcher-image',
        'localhost/kubevirt-ts/virt-launcher:test',
        '--kubevirt-namespace',
        ns,
        '--port',
        String(port),
        '--listen-address',
        '127.0.0.1',
        '--leader-elect-lease-duration',
        '4',
        '--leader-elect-renew-deadline',
        '3',
        '--leader-elect-retry-period',
        '1',
        ...extra,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stderr?.on('data', (d) => log.push(String(d)));
    const p = { child, port, log };
    procs.push(p);
    await waitFor('the health server', async () => (await status(port, '/healthz')) === 200);
    return p;
  };

  beforeAll(async () => {
    const cp = await sharedControlPlane();
    kubeconfig = cp.kubeconfigPath;
    const applied = spawnSync(kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', crdsDir], {
      encoding: 'utf8',
    });
    expect(applied.status, applied.stderr).toBe(0);
    // The NetworkAttachmentDefinition CRD, which the install ships (manifests/01-crds.yaml)
    // and whose informer virt-controller waits for.
    const nad = spawnSync(kubectl, ['--kubeconfig', kubeconfig, 'apply', '-f', '-'], {
      encoding: 'utf8',
      input: stringify(networkAttachmentDefinitionCrd()),
    });
    expect(nad.status, nad.stderr).toBe(0);
    spawnSync(kubectl, ['--kubeconfig', kubeconfig, 'create', 'namespace', ns], { encoding: 'utf8' });
    client = KubeClient.fromKubeconfig(kubeconfig);
  }, 120_000);

  afterAll(async () => {
    for (const p of procs) p.child.kill('SIGKILL');
    spawnSync(kubectl, ['--kubeconfig', kubeconfig, 'delete', 'namespace', ns, '--wait=false'], {
      encoding: 'utf8',
    });
    client?.close();
  });

  it('refuses a bad flag, naming it', () => {
    const r = spawnSync(tsx, [entry, 'virt-controller', '--launcher-image', 'bad image'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('--launcher-image: "bad image" is not an image reference');
  }, 60_000);

  it('--metrics-listen serves its metrics; --v and the KubeVirt resource set the level of its JSON lines', async () => {
    const mport = await freePort();
    const c = await start(['--no-leader-elect', '--v', '3', '--metrics-listen', `127.0.0.1:${mport}`]);
    const lines = () =>
      c.log
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const text = await waitFor(
      '/metrics with the controller leading',
      async () => {
        const t = await (await fetch(`http://127.0.0.1:${mport}/metrics`)).text();
        return /^kubevirt_virt_controller_leading_status 1$/m.test(t) ? t : undefined;
      },
      60_000,
      () => logsOf([c]),
    );
    expect(text).toMatch(/^# TYPE kubevirt_vmi_migration_succeeded gauge$/m);
    expect((await fetch(`http://127.0.0.1:${mport}/readyz`)).status).toBe(200);
    expect(lines().find((l) => String(l.msg).startsWith('metrics on '))).toMatchObject({
      level: 'info',
      component: 'virt-controller',
      msg: `metrics on http://127.0.0.1:${mport}/metrics`,
    });
    // The KubeVirt resource's logVerbosity.virtController wins over --v while set...
    await client.create(KubeVirtType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'KubeVirt',
      metadata: { name: 'kubevirt', namespace: ns },
      spec: { configuration: { developerConfiguration: { logVerbosity: { virtController: 5 } } } },
    } as KubeObject);
    await waitFor('verbosity 5', async () => lines().some((l) => l.verbosity === 5));
    // ... and --v is back when it goes.
    await client.delete(KubeVirtType, 'kubevirt', { namespace: ns });
    await waitFor('verbosity 3 again', async () => lines().some((l) => l.verbosity === 3));
    expect(
      lines()
        .filter((l) => l.msg === 'log verbosity changed')
        .map((l) => l.verbosity),
    ).toEqual([5, 3]);
    for (const l of lines())
      expect(l).toMatchObject({ component: 'virt-controller', level: expect.any(String) });
    c.child.kill('SIGKILL');
  }, 120_000);

  it('two replicas: one leader on the Lease; it renders launcher pods with --launcher-image; the other takes over when it dies', async () => {
    const a = await start();
    const b = await start();
    const leader = await waitFor(
      'a leader',
      async () => {
        const [la, lb] = [await leads(a.port), await leads(b.port)];
        if (la === true && lb === false) return a;
        if (lb === true && la === false) return b;
        return undefined;
      },
      60_000,
      () => logsOf([a, b]),
    );
    const other = leader === a ? b : a;
    const lease = (await client.get(LeaseType, 'virt-controller', ns)) as KubeObject & {
      spec?: { holderIdentity?: string };
    };
    expect(lease.spec?.holderIdentity).toMatch(new RegExp(`_${leader.child.pid}$`));

    const vmi = (name: string) => ({
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name, namespace: ns },
      spec: { domain: { devices: {}, resources: { requests: { memory: '128Mi' } } } },
    });
    await client.create(VmiResource, vmi('first') as KubeObject);
    const pod = await waitFor('the launcher pod of first', async () => {
      const pods = (await client.list<Pod>(PodType, { namespace: ns })).items;
      return pods.find((p) => p.metadata?.labels?.['kubevirt.io/created-by']);
    });
    expect(pod.spec?.containers?.[0]?.image).toBe('localhost/kubevirt-ts/virt-launcher:test');

    leader.child.kill('SIGKILL');
    await waitFor('the other replica leading', async () => (await leads(other.port)) === true, 30_000);
    await client.create(VmiResource, vmi('second') as KubeObject);
    await waitFor('a launcher pod of second', async () => {
      const pods = (await client.list<Pod>(PodType, { namespace: ns })).items;
      return pods.filter((p) => p.metadata?.labels?.['kubevirt.io/created-by']).length === 2;
    });
  }, 180_000);
});
