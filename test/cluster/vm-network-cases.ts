/**
 * Issue 16's other bindings on the real one-node cluster, registered by
 * test/cluster/vm-tiny.test.ts after its own VM (one install of the components, one
 * namespace, its peer pod; a second test file would run beside that file's virt-handler
 * and kubelet restarts):
 *
 * - the bridge binding on the pod network: virt-handler moves the launcher pod's address
 *   (the kubelet's CNI gave it) to the guest, which takes it by DHCP; the peer pod and the
 *   host side of the test bridge reach the guest's echo on the pod IP, the guest reaches
 *   the peer from the pod IP;
 * - a Multus secondary network: the cluster's CNI is Multus wrapping the bridge network
 *   (scripts/cluster/multus.ts), a NetworkAttachmentDefinition of type bridge on a bridge
 *   this test creates; the guest leases its address there and real TCP crosses it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { MULTUS_USER, multusBin, multusKubeconfig } from '../../scripts/cluster/multus';
import { type ClusterInfo, clusterPaths } from '../../scripts/cluster/state';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { runPod } from '../support/cluster-pods';
import { SerialConsole } from '../support/guest';
import { integrationRequired } from '../support/integration';
import { ECHO_CLIENT, ECHO_SERVER } from '../support/netns-process';
import { waitFor } from '../support/wait';
import { peerEcho, peerLogOnceGot } from './peer-traffic';

/** What the cases share with the file that registers them. */
export interface ClusterVmContext {
  info: ClusterInfo;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  kubectl: (...args: string[]) => string;
  dir: string;
  namespace: string;
  /** The echo server pod on the pod network (port `peerPort`), when the file made one. */
  peer?: V1Pod;
  peerPort: number;
}

/** The secondary network's host bridge and subnet (created and removed by the test). */
const SECONDARY_BRIDGE = 'kvts-mnet0';
const SECONDARY_HOST = '10.246.0.1';
const SECONDARY_SUBNET = '10.246.0.0/24';
const GUEST_PORT = 8080;
const IMAGE = 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest';

/** A tiny-guest VM from its containerDisk with these interfaces and networks. */
export function vmManifest(
  name: string,
  namespace: string,
  interfaces: unknown[],
  networks: unknown[],
): string {
  return JSON.stringify({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace },
    spec: {
      runStrategy: 'Always',
      template: {
        metadata: { labels: { 'kubevirt.io/vm': name } },
        spec: {
          terminationGracePeriodSeconds: 5,
          domain: {
            devices: {
              autoattachGraphicsDevice: false,
              disks: [{ name: 'boot', disk: { bus: 'virtio' } }],
              interfaces,
            },
            resources: { requests: { memory: '128Mi' } },
          },
          networks,
          volumes: [{ name: 'boot', containerDisk: { image: IMAGE, imagePullPolicy: 'Never' } }],
        },
      },
    },
  });
}

/** Echoes `bytes` through host:port from this (host) process; resolves with the count back. */
function hostEcho(host: string, port: number, bytes: number): string {
  return execFileSync(process.execPath, ['-e', ECHO_CLIENT, host, String(port), String(bytes)], {
    encoding: 'utf8',
    timeout: 60_000,
  }).trim();
}

/** Runs a VM until its guest is on the console; returns the pieces the checks need. */
export async function startVm(ctx: ClusterVmContext, name: string, manifest: string) {
  const file = join(ctx.dir, `${name}.json`);
  writeFileSync(file, manifest);
  ctx.kubectl('apply', '-f', file);
  const readVmi = async () =>
    (await ctx.custom.getNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      namespace: ctx.namespace,
      plural: 'virtualmachineinstances',
      name,
    })) as VirtualMachineInstance;
  await waitFor(
    `VMI ${name} Running`,
    async () => ((await readVmi().catch(() => undefined))?.status?.phase === 'Running' ? true : undefined),
    240_000,
    1_000,
  );
  const pods = (
    await ctx.core.listNamespacedPod({
      namespace: ctx.namespace,
      labelSelector: `kubevirt.io=virt-launcher,kubevirt.io/vm=${name}`,
    })
  ).items;
  expect(pods, `launcher pods of ${name}`).toHaveLength(1);
  const launcher = pods[0];
  const qemuPid = Number(
    execFileSync('pgrep', ['-f', `guest=${ctx.namespace}_${name},`], { encoding: 'utf8' }).trim(),
  );
  const inPod = (cmd: string, ...args: string[]) =>
    execFileSync('nsenter', [`--net=/proc/${qemuPid}/ns/net`, '--', cmd, ...args], { encoding: 'utf8' });
  const con = await SerialConsole.connect(
    join(
      shortDir(
        podEmptyDirPath(join(ctx.info.stateDir, 'kubelet', 'pods'), launcher.metadata?.uid ?? '', 'sockets'),
      ),
      CONSOLE_SOCKET,
    ),
    30_000,
  );
  return { launcher, inPod, con, readVmi };
}

/** Deletes the VM and waits for its launcher pod to go (the kubelet runs CNI DEL). */
export async function deleteVm(ctx: ClusterVmContext, name: string): Promise<void> {
  ctx.kubectl('delete', 'vm', '-n', ctx.namespace, name, '--wait=false');
  await waitFor(
    `launcher pod of ${name} gone`,
    async () =>
      (
        await ctx.core.listNamespacedPod({
          namespace: ctx.namespace,
          labelSelector: `kubevirt.io=virt-launcher,kubevirt.io/vm=${name}`,
        })
      ).items.length === 0,
    180_000,
    1_000,
  );
}

/**
 * The echo server pod on the pod network: the registering file's, else the one an earlier
 * case here started, else a new one (when the cases run alone, `vitest -t`).
 */
export async function peerOf(ctx: ClusterVmContext): Promise<V1Pod> {
  if (ctx.peer) return ctx.peer;
  const running = await ctx.core
    .readNamespacedPod({ name: 'peer', namespace: ctx.namespace })
    .catch(() => undefined);
  if (running?.status?.podIP) return running;
  return runPod(ctx.core, {
    namespace: ctx.namespace,
    name: 'peer',
    image: ctx.info.images['virt-launcher'] ?? '',
    command: ['node', '-e', ECHO_SERVER, String(ctx.peerPort)],
  });
}

interface IpLink {
  ifname: string;
  master?: string;
  addr_info?: { family: string; local: string; prefixlen: number }[];
}
const byName = (json: string) => new Map((JSON.parse(json) as IpLink[]).map((l) => [l.ifname, l]));

/** Registers the bridge-binding and Multus cases; `ctx` is read when they run. */
export function registerNetworkCases(ctx: () => ClusterVmContext): void {
  it('the bridge binding on the kubelet pod network: the guest holds the pod IP; the peer pod and the host reach it', async () => {
    const c = ctx();
    const peer = await peerOf(c);
    const name = 'vm-bridge';
    const vm = await startVm(
      c,
      name,
      vmManifest(name, c.namespace, [{ name: 'default', bridge: {} }], [{ name: 'default', pod: {} }]),
    );
    try {
      const podIP = vm.launcher.status?.podIP ?? '';
      expect(podIP).toMatch(/^10\.245\.0\.\d+$/);
      // Phase 1 in the kubelet's pod namespace: eth0 renamed and bridged, the pod IP gone from it.
      const links = byName(vm.inPod('ip', '-j', 'addr', 'show'));
      expect(links.get('eth0-nic')?.master).toBe('k6t-eth0');
      expect(links.get('tap0')?.master).toBe('k6t-eth0');
      expect(links.has('eth0')).toBe(false);
      const v4 = [...links.values()].flatMap((l) =>
        (l.addr_info ?? []).filter((a) => a.family === 'inet' && a.local !== '127.0.0.1').map((a) => a.local),
      );
      expect(v4).toEqual(['169.254.75.10']);
      const out = await vm.con.waitFor(/KUBEVIRT-TS-GUEST-LISTENING tcp\/8080/, 180_000);
      expect(out).toContain(`KUBEVIRT-TS-GUEST-NET eth0=${podIP}/24 router=none`);
      // The guest's own connection comes from the pod IP (no NAT: it holds it).
      const peerIP = peer.status?.podIP ?? '';
      const got = await vm.con.run(
        `dd if=/dev/zero bs=1024 count=64 2>/dev/null | nc -w 10 ${peerIP} ${c.peerPort} | wc -c`,
        120_000,
      );
      expect(got.trim()).toBe('65536');
      const seen = await peerLogOnceGot(c.kubectl, c.namespace, podIP, 65536);
      expect(seen).toContain(`from ${podIP} got 65536`);
      const fromPeer = peerEcho(c.kubectl, c.namespace, podIP, GUEST_PORT, 200000);
      expect(fromPeer.trim()).toBe('echoed 200000');
      // The host side of the test bridge (its .1) reaches the guest on the pod IP directly.
      expect(hostEcho(podIP, GUEST_PORT, 100000)).toBe('echoed 100000');
      // The lease reaches the VMI status at virt-handler's next sync (its resync: 5 s).
      const iface = await waitFor(
        'the guest lease in the VMI status',
        async () => {
          const i = (await vm.readVmi()).status?.interfaces?.[0];
          return i?.ipAddress ? i : undefined;
        },
        30_000,
        500,
      );
      expect(iface).toMatchObject({ name: 'default', ipAddress: podIP });
      process.stdout.write(
        `cluster VM ${name} (bridge): guest ${podIP} -> ${peerIP}:${c.peerPort} sent 65536 echoed 65536; ` +
          `${peerIP} -> ${podIP}:${GUEST_PORT} echoed 200000; host -> ${podIP}:${GUEST_PORT} echoed 100000\n`,
      );
    } finally {
      vm.con.close();
    }
    await deleteVm(c, name);
  }, 600_000);

  it('a Multus secondary network: the guest leases its address on the NAD bridge, real TCP both ways over it', async (t) => {
    const c = ctx();
    if (!c.info.multus) {
      const why = `the cluster has no Multus (${multusBin()} is not built): run scripts/kube/build-multus.sh`;
      if (integrationRequired()) throw new Error(why);
      t.skip(why);
    }
    const name = 'vm-multus';
    execFileSync('ip', ['link', 'add', SECONDARY_BRIDGE, 'type', 'bridge']);
    let server: ReturnType<typeof createServer> | undefined;
    try {
      execFileSync('ip', ['addr', 'add', `${SECONDARY_HOST}/24`, 'dev', SECONDARY_BRIDGE]);
      execFileSync('ip', ['link', 'set', SECONDARY_BRIDGE, 'up']);
      const nad = {
        apiVersion: 'k8s.cni.cncf.io/v1',
        kind: 'NetworkAttachmentDefinition',
        metadata: { name: 'blue-net', namespace: c.namespace },
        spec: {
          config: JSON.stringify({
            cniVersion: '0.3.1',
            name: 'blue-net',
            type: 'bridge',
            bridge: SECONDARY_BRIDGE,
            isGateway: false,
            ipMasq: false,
            ipam: {
              type: 'host-local',
              ranges: [[{ subnet: SECONDARY_SUBNET, rangeStart: '10.246.0.10', rangeEnd: '10.246.0.250' }]],
              dataDir: join(c.info.stateDir, 'cni', 'ipam-secondary'),
            },
          }),
        },
      };
      writeFileSync(join(c.dir, 'nad.json'), JSON.stringify(nad));
      c.kubectl('apply', '-f', join(c.dir, 'nad.json'));
      const vm = await startVm(
        c,
        name,
        vmManifest(
          name,
          c.namespace,
          [
            { name: 'default', masquerade: {} },
            { name: 'blue', bridge: {} },
          ],
          [
            { name: 'default', pod: {} },
            { name: 'blue', multus: { networkName: 'blue-net' } },
          ],
        ),
      );
      try {
        // Multus attached it (its network-status annotation) under upstream's hashed name.
        const status = JSON.parse(
          vm.launcher.metadata?.annotations?.['k8s.v1.cni.cncf.io/network-status'] ?? '[]',
        ) as { name: string; interface?: string; ips?: string[] }[];
        const blue = status.find((s) => s.name === `${c.namespace}/blue-net`);
        expect(blue?.interface).toBe('pod16477688c0e');
        // It did so as its own user, allowed what the thin plugin needs and nothing more.
        const conf = JSON.parse(readFileSync(c.info.multus?.config ?? '', 'utf8')) as { kubeconfig: string };
        expect(conf.kubeconfig).toBe(multusKubeconfig(clusterPaths(c.info.stateDir).cni));
        expect(readFileSync(conf.kubeconfig, 'utf8')).not.toContain('admin');
        const canI = (...args: string[]) => {
          try {
            return c.kubectl('auth', 'can-i', '--as', MULTUS_USER, ...args).trim();
          } catch (e) {
            return String((e as { stdout?: string }).stdout ?? '').trim();
          }
        };
        expect(canI('get', 'network-attachment-definitions.k8s.cni.cncf.io', '-n', c.namespace)).toBe('yes');
        expect(canI('update', 'pods', '--subresource=status', '-n', c.namespace)).toBe('yes');
        expect(canI('create', 'network-attachment-definitions.k8s.cni.cncf.io', '-n', c.namespace)).toBe(
          'no',
        );
        expect(canI('get', 'secrets', '-n', c.namespace)).toBe('no');
        expect(canI('delete', 'pods', '-n', c.namespace)).toBe('no');
        const secondaryIP = blue?.ips?.[0] ?? '';
        expect(secondaryIP).toMatch(/^10\.246\.0\.\d+$/);
        const links = byName(vm.inPod('ip', '-j', 'addr', 'show'));
        expect(links.get('16477688c0e-nic')?.master).toBe('k6t-16477688c0e');
        expect(links.get('tap16477688c0e')?.master).toBe('k6t-16477688c0e');
        expect(links.get('eth0')?.addr_info?.find((a) => a.family === 'inet')?.local).toBe(
          vm.launcher.status?.podIP,
        );
        await vm.con.waitFor(/KUBEVIRT-TS-GUEST-LISTENING tcp\/8080/, 180_000);
        // The tiny guest runs DHCP on eth0 only: its second NIC is brought up and leases by hand.
        const lease = await vm.con.run(
          'ip link set eth1 up; udhcpc -i eth1 -n -q -t 10 -T 1 -s /etc/udhcpc.script',
          60_000,
        );
        expect(`${vm.con.output}${lease}`).toContain(
          `KUBEVIRT-TS-GUEST-NET eth1=${secondaryIP}/24 router=none`,
        );
        // The host side of the secondary bridge reaches the guest's echo there...
        expect(hostEcho(secondaryIP, GUEST_PORT, 150000)).toBe('echoed 150000');
        // ... and the guest reaches a server on the host side from its secondary address.
        const seen: string[] = [];
        server = createServer((s) => {
          let n = 0;
          s.on('data', (d) => {
            n += d.length;
            s.write(d);
          });
          s.on('end', () => {
            seen.push(`${s.remoteAddress} ${n}`);
            s.end();
          });
        });
        await new Promise<void>((r) => server?.listen(7171, SECONDARY_HOST, r));
        const got = await vm.con.run(
          `dd if=/dev/zero bs=1024 count=32 2>/dev/null | nc -w 10 ${SECONDARY_HOST} 7171 | wc -c`,
          120_000,
        );
        expect(got.trim()).toBe('32768');
        expect(seen).toEqual([`${secondaryIP} 32768`]);
        // The node agent writes the lease into the status on its next sync of the VMI.
        const vmi = await waitFor(
          'the secondary lease in the VMI status',
          async () => {
            const v = await vm.readVmi();
            return v.status?.interfaces?.find((i) => i.name === 'blue')?.ipAddress ? v : undefined;
          },
          120_000,
          1_000,
        ).catch(() => vm.readVmi());
        expect(vmi.status?.interfaces?.find((i) => i.name === 'blue')).toMatchObject({
          ipAddress: secondaryIP,
          podInterfaceName: 'pod16477688c0e',
        });
        process.stdout.write(
          `cluster VM ${name} (multus ${SECONDARY_BRIDGE}): host -> ${secondaryIP}:${GUEST_PORT} echoed 150000; ` +
            `guest ${secondaryIP} -> ${SECONDARY_HOST}:7171 sent 32768 echoed 32768\n`,
        );
      } finally {
        vm.con.close();
      }
      await deleteVm(c, name);
      // CNI DEL through Multus released the secondary lease.
      const leases = execFileSync('ls', [join(c.info.stateDir, 'cni', 'ipam-secondary', 'blue-net')], {
        encoding: 'utf8',
      });
      expect(leases.split('\n').filter((f) => /^10\./.test(f))).toEqual([]);
    } finally {
      server?.close();
      execFileSync('ip', ['link', 'del', SECONDARY_BRIDGE]);
    }
  }, 600_000);
}
