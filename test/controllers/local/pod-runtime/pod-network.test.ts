/**
 * The local pod runtime's pod network with the real CNI bridge + host-local plugins: two
 * pods get their own namespaces and addresses from the configured subnet (in pod status),
 * no default route, real TCP between them by pod IP; deletion removes the namespaces and
 * veths; a failing CNI ADD leaves nothing behind. Each test uses its own bridge and subnet.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../../src/controllers/common/pod';
import { netnsName } from '../../../../src/controllers/local/pod-runtime/pod-network';
import { PodRuntime } from '../../../../src/controllers/local/pod-runtime/pod-runtime';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { EventType, PodType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { canTestNetworking, netSnapshot, scopedSnapshot } from '../../../support/net-snapshot';

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
    await new Promise((r) => setTimeout(r, 25));
  }
}

const nodePod = (name: string, script: string, env: Record<string, string> = {}): Pod =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 2,
      containers: [
        {
          name: 'compute',
          image: 'x',
          command: ['node'],
          args: ['-e', script],
          env: Object.entries(env).map(([k, v]) => ({ name: k, value: v })),
        },
      ],
    },
  }) as Pod;

// TCP echo server on 8080 that writes what it received to got.txt.
const SERVER = `require('net').createServer(s=>{let n=0;s.on('data',d=>{n+=d.length;s.write(d)});s.on('end',()=>{require('fs').writeFileSync('got.txt',String(n));s.end()})}).listen(8080,'0.0.0.0')`;
// Client: sends 64 KiB to $PEER:8080, writes the echoed byte count to echoed.txt; also its routes.
const CLIENT = `const c=require('net').connect(8080,process.env.PEER,()=>{c.end(Buffer.alloc(65536,7))});let n=0;c.on('data',d=>n+=d.length);c.on('close',()=>{require('fs').writeFileSync('echoed.txt',String(n));setInterval(()=>{},1000)});c.on('error',e=>{require('fs').writeFileSync('echoed.txt','error '+e.message)})`;

describe.skipIf(!canTestNetworking())('pod network (CNI bridge + host-local)', () => {
  let store: EmbeddedStore;
  let root: string;
  let rt: PodRuntime | undefined;
  const bridge = `kvtst${process.pid % 10000}`;
  const newRuntime = (pluginDir = '/usr/lib/cni') =>
    new PodRuntime({
      client: store,
      nodeName: 'n1',
      root,
      bindPending: true,
      manageNode: false,
      commands: { node: [process.execPath] },
      pollMs: 50,
      log: () => {},
      network: { bridge, subnet: '10.244.79.0/24', pluginDir, dataDir: join(root, 'cni') },
    });
  const get = (name: string) => store.get<Pod & KubeObject>(PodType, name, 'default');

  beforeEach(async () => {
    store = await EmbeddedStore.open();
    root = mkdtempSync(join(tmpdir(), 'kvts-podnet-'));
  });

  afterEach(async () => {
    await rt?.stop();
    rt?.killAll();
    await store.close?.();
    rmSync(root, { recursive: true, force: true });
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // never made
    }
  });

  it('gives pods their own namespace and IP, carries TCP between them, and removes it all on deletion', async () => {
    rt = newRuntime();
    await rt.start();
    await store.create(PodType, nodePod('server', SERVER) as KubeObject);
    const server = await until('server Running', async () =>
      (await get('server')).status?.podIP ? get('server') : undefined,
    );
    const ip = server.status?.podIP ?? '';
    expect(ip).toMatch(/^10\.244\.79\.\d+$/);
    expect(server.status?.podIPs).toEqual([{ ip }]);
    const uid = server.metadata?.uid ?? '';
    const ns = netnsName(uid);
    expect(rt.networkOf(uid)).toMatchObject({ netns: `/run/netns/${ns}`, ip });
    // Inside: eth0 with the pod IP, and no default route (nothing leaves the machine).
    const addr = JSON.parse(
      execFileSync('ip', ['-n', ns, '-j', 'addr', 'show', 'eth0'], { encoding: 'utf8' }),
    );
    expect(addr[0].addr_info.map((a: { local: string }) => a.local)).toContain(ip);
    expect(execFileSync('ip', ['-n', ns, 'route', 'show', 'default'], { encoding: 'utf8' }).trim()).toBe('');
    expect(scopedSnapshot([ns], bridge).netns).toEqual([ns]);

    await store.create(PodType, nodePod('client', CLIENT, { PEER: ip }) as KubeObject);
    const client = await until('client Running', async () =>
      (await get('client')).status?.podIP ? get('client') : undefined,
    );
    expect(client.status?.podIP).not.toBe(ip);
    const cuid = client.metadata?.uid ?? '';
    const echoed = await until('echo', () => {
      const f = join(root, cuid, 'echoed.txt');
      return existsSync(f) && readFileSync(f, 'utf8');
    });
    const got = await until('server count', () => {
      const f = join(root, uid, 'got.txt');
      return existsSync(f) && readFileSync(f, 'utf8');
    });
    process.stdout.write(
      `pod network: client ${client.status?.podIP} -> server ${ip}:8080 sent 65536, server got ${got}, echoed ${echoed}\n`,
    );
    expect(got).toBe('65536');
    expect(echoed).toBe('65536');

    const before = scopedSnapshot([ns, netnsName(cuid)], bridge);
    expect(before.bridgePorts).toHaveLength(2);
    for (const name of ['server', 'client']) await store.delete(PodType, name, { namespace: 'default' });
    await until('pods gone', async () => {
      try {
        await get('server');
        return false;
      } catch {
        try {
          await get('client');
          return false;
        } catch {
          return true;
        }
      }
    });
    const after = await until('namespaces gone', () => {
      const s = scopedSnapshot([ns, netnsName(cuid)], bridge);
      return s.netns.length === 0 ? s : undefined;
    });
    // The two veths went with the namespaces; the node bridge stays (as kubelet's cni0 does).
    expect(after.bridgePorts).toEqual([]);
    expect(after.bridge).toBe(true);
    expect(after.nftTables).toEqual(before.nftTables);
    // host-local released both addresses.
    const leases = execFileSync('ls', [join(root, 'cni', 'kubevirt-ts')], { encoding: 'utf8' }).split('\n');
    expect(leases.filter((l) => l.startsWith('10.'))).toEqual([]);
  });

  it('leaves nothing behind when CNI ADD fails, and keeps the pod Pending with an event', async () => {
    // A plugin directory without host-local: the bridge plugin's IPAM call fails.
    const plugins = join(root, 'plugins');
    mkdirSync(plugins);
    symlinkSync('/usr/lib/cni/bridge', join(plugins, 'bridge'));
    const tablesBefore = netSnapshot().nftTables;
    rt = newRuntime(plugins);
    await rt.start();
    await store.create(PodType, nodePod('p', SERVER) as KubeObject);
    const events = await until('sandbox event', async () => {
      const list = await store.list<KubeObject & { reason?: string; message?: string }>(EventType, {
        namespace: 'default',
      });
      const e = list.items.find((x) => x.reason === 'FailedCreatePodSandBox');
      return e;
    });
    expect(events.message).toMatch(/CNI plugin bridge ADD .*failed/);
    const p = await until('pod Pending', async () =>
      (await get('p')).status?.phase === 'Pending' ? get('p') : undefined,
    );
    expect(p.status?.podIP).toBeUndefined();
    // Stopping the runtime lets an attempt in flight (the status write requeues the pod) finish.
    await rt.stop();
    rt = undefined;
    const uid = p.metadata?.uid ?? '';
    const after = scopedSnapshot([netnsName(uid)], bridge);
    // No namespace, no veth on the bridge, no host nftables table: only the bridge itself may exist.
    expect(after.netns).toEqual([]);
    expect(after.bridgePorts).toEqual([]);
    expect(after.nftTables).toEqual(tablesBefore);
  });
});
