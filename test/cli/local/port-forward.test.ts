/**
 * virtctl port-forward in local mode with real traffic: the local API (served on a unix
 * socket as `up` does, over a store holding the VMI and its launcher pod) upgrades each
 * forwarded connection and relays it from inside the launcher pod's namespace (the real
 * CNI plugins made it, phase 1 the masquerade binding) to a stand-in guest's echo server
 * at 10.0.2.2:8080 behind k6t-eth0. The CLI side listens on a loopback port.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { forwardPort, parsePortMapping } from '../../../src/cli/commands/virtctl/port-forward';
import { type LocalApiServer, serveLocalApi } from '../../../src/cli/local/local-api';
import { openPortForward } from '../../../src/cli/local/local-client';
import type { LocalNode } from '../../../src/cli/local/local-node';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { podEmptyDirPath } from '../../../src/controllers/launcher-protocol/paths';
import { netnsName, PodNetwork } from '../../../src/controllers/local/pod-runtime/pod-network';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { setUpPodNetwork } from '../../../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking, scopedSnapshot } from '../../support/net-snapshot';
import { ECHO_SERVER, inNs, type NsProcess, startInNs } from '../../support/netns-process';

function echoThrough(port: number, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const c = connect(port, '127.0.0.1', () => c.end(Buffer.alloc(bytes, 7)));
    let got = 0;
    c.on('data', (d) => {
      got += d.length;
    });
    c.on('close', () => resolve(got));
    c.on('error', reject);
  });
}

describe.skipIf(!canTestNetworking())('virtctl port-forward (local mode, real netns)', () => {
  const tag = process.pid % 10000;
  const bridge = `kvtsf${tag}`;
  const guestNs = `kvts-fguest-${tag}`;
  let root: string;
  let net: PodNetwork;
  let store: EmbeddedStore;
  let api: LocalApiServer;
  let podUid = '';
  let echo: NsProcess | undefined;
  let listener: Server | undefined;
  let before: ReturnType<typeof scopedSnapshot>;

  beforeAll(() => {
    before = scopedSnapshot([guestNs], bridge);
    root = mkdtempSync(join(tmpdir(), 'kvts-pf-'));
    net = new PodNetwork({
      bridge,
      subnet: '10.244.88.0/24',
      pluginDir: '/usr/lib/cni',
      dataDir: join(root, 'cni'),
    });
  });

  afterAll(async () => {
    echo?.child.kill('SIGKILL');
    listener?.close();
    await api?.close();
    if (podUid) await net.tearDown(podUid, join(root, 'pods', podUid)).catch(() => undefined);
    for (const cmd of [
      ['netns', 'del', guestNs],
      ['link', 'del', bridge],
    ]) {
      try {
        execFileSync('ip', cmd, { stdio: 'ignore' });
      } catch {
        // not made
      }
    }
    rmSync(root, { recursive: true, force: true });
    expect(scopedSnapshot([guestNs, ...(podUid ? [netnsName(podUid)] : [])], bridge)).toEqual({
      ...before,
      netns: before.netns,
    });
  });

  // Root cause of the old ECONNREFUSED: the loopback listener's sockets were not half-open,
  // so the client's end (it sends, then ends, then reads the echo) closed the return way at
  // once; the test failed at 0 bytes and its clean-up killed the stand-in guest's echo server
  // while the relay was still connecting, which is what the relay then reported.
  it('carries 65536 bytes both ways to the guest port (half-close included), and says why it cannot forward', async () => {
    store = await EmbeddedStore.open();
    const vmi = (await store.create(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'pf', namespace: 'default' },
      spec: {
        domain: { devices: { interfaces: [{ name: 'default', masquerade: {} }] } },
        networks: [{ name: 'default', pod: {} }],
      },
    } as VirtualMachineInstance & KubeObject)) as VirtualMachineInstance & KubeObject;
    await store.updateStatus(VmiResource, { ...vmi, status: { phase: 'Running' } });
    const pod = await store.create(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'virt-launcher-pf',
        namespace: 'default',
        labels: { 'kubevirt.io/created-by': vmi.metadata?.uid ?? '' },
      },
    } as KubeObject);
    podUid = pod.metadata?.uid ?? '';
    mkdirSync(join(root, 'pods', podUid), { recursive: true });
    const sockets = podEmptyDirPath(join(root, 'pods'), podUid, 'sockets');
    mkdirSync(sockets, { recursive: true });
    const info = await net.setUp(podUid, join(root, 'pods', podUid));
    await setUpPodNetwork(vmi, { netns: info.netns, socketDir: sockets });
    // The stand-in guest at 10.0.2.2 on k6t-eth0, with an echo server on 8080.
    const lns = netnsName(podUid);
    execFileSync('ip', ['netns', 'add', guestNs]);
    inNs(lns, 'ip', [
      'link',
      'add',
      'gport',
      'type',
      'veth',
      'peer',
      'name',
      'eth0',
      'netns',
      `/run/netns/${guestNs}`,
    ]);
    inNs(lns, 'ip', ['link', 'set', 'gport', 'master', 'k6t-eth0', 'up']);
    inNs(guestNs, 'ip', ['addr', 'add', '10.0.2.2/24', 'dev', 'eth0']);
    inNs(guestNs, 'ip', ['link', 'set', 'eth0', 'up']);
    echo = await startInNs(guestNs, process.execPath, ['-e', ECHO_SERVER, '8080'], 'ready');

    const node = {
      store,
      nodeName: 'local',
      o: { paths: { pods: join(root, 'pods') } },
      podNetns: (uid: string) => (uid === podUid ? info.netns : undefined),
    } as unknown as LocalNode;
    const apiSocket = join(root, 'api.sock');
    api = await serveLocalApi(node, apiSocket);
    listener = await forwardPort(
      (p) => openPortForward(apiSocket, 'default', 'pf', p),
      parsePortMapping('0:8080'),
      '127.0.0.1',
      (m) => process.stderr.write(`pf: ${m}\n`),
    );
    const addr = listener.address();
    const port = typeof addr === 'object' && addr ? addr.port : 0;
    expect(await echoThrough(port, 65536)).toBe(65536);
    expect(await echoThrough(port, 1000)).toBe(1000);
    await expect.poll(() => echo?.out()).toMatch(/got 65536/);
    process.stdout.write(
      `port-forward: 127.0.0.1:${port} -> pod ${info.ip} netns -> guest 10.0.2.2:8080: 65536 and 1000 bytes echoed\n`,
    );

    // Nothing listens on 9090 in the guest: the stream closes with no bytes.
    const closed = await openPortForward(apiSocket, 'default', 'pf', 9090);
    const got = await new Promise<number>((resolve) => {
      let n = 0;
      closed.on('data', (d) => {
        n += d.length;
      });
      closed.on('close', () => resolve(n));
      closed.end('x');
    });
    expect(got).toBe(0);
    await expect(openPortForward(apiSocket, 'default', 'nope', 8080)).rejects.toThrow(
      'VirtualMachineInstance default/nope not found',
    );
    expect(() => parsePortMapping('8080/udp')).toThrow('UDP forwarding is not supported');
    expect(parsePortMapping('2222:22')).toEqual({ local: 2222, remote: 22 });
  });
});
