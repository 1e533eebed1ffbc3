/**
 * Reaching a guest in local mode the ways a user does, end to end with the real tiny guest
 * (recipe 8: dropbear) under `LocalNode` (what `kubevirt-ts up` runs) on a test bridge:
 * - `virtctl port-forward vmi/NAME 0:8080` (the built CLI) to the guest's echo server;
 * - `virtctl ssh` and `virtctl scp` with the system's OpenSSH client over
 *   `port-forward --stdio`, with a key the test injects through a cloud-init NoCloud disk;
 * - an open TCP connection from another pod to the guest (pod IP, masquerade) survives a
 *   virt-handler restart (the new handler takes the running VMI over and leaves the pod's
 *   network as it is);
 * - nothing is left in the host's network configuration after the VM is deleted, nor after
 *   a VMI whose start failed (its kernel is not in the image: QEMU refuses to start, after
 *   the pod network was set up) is deleted: the test lists links, network namespaces and
 *   nftables tables before and after.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { applyObjects, loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { netnsName, PodNetwork } from '../../src/controllers/local/pod-runtime/pod-network';
import {
  PodType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { SerialConsole } from '../support/guest';
import { canTestNetworking, netSnapshot, networkGuestDir, scopedSnapshot } from '../support/net-snapshot';
import { inNs, repoRoot } from '../support/netns-process';
import { runVirtctl } from '../support/virtctl-process';
import { echoThrough, HOLD, output } from './network-local-ssh-support';
import { cliBuilt, cliEntry, e2eRun, waitFor } from './node-harness';

const guest = networkGuestDir(undefined, 8);
const hasSsh = ['ssh', 'scp', 'ssh-keygen'].every((b) => existsSync(`/usr/bin/${b}`));
const run = e2eRun('ssh, scp and port-forward in local mode', () =>
  !canTestNetworking()
    ? 'needs root and /usr/lib/cni (containernetworking-plugins)'
    : !cliBuilt()
      ? 'npm run build first'
      : !guest
        ? 'no tiny guest of recipe 8 or later (dropbear): run scripts/guest/build.sh'
        : !hasSsh
          ? "needs OpenSSH's ssh and ssh-keygen (openssh-client)"
          : undefined,
);

describe.runIf(run)('ssh, scp, port-forward and a handler restart in local mode (real guest)', () => {
  const tag = process.pid % 10000;
  const bridge = `kvtss${tag}`;
  const subnet = '10.244.83.0/24';
  const name = `ssh-${process.pid}`;
  const failedName = `nokernel-${process.pid}`;
  const logs: string[] = [];
  const peerUid = `dddd${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000003`;
  let state: string;
  let node: LocalNode;
  let peerNet: PodNetwork;
  let before: ReturnType<typeof netSnapshot>;
  let scopedBefore: ReturnType<typeof scopedSnapshot>;
  const launcherNs: string[] = [];
  const children: ChildProcess[] = [];
  const virtctl = join(dirname(cliEntry()), 'virtctl.js');

  beforeAll(async () => {
    before = netSnapshot();
    scopedBefore = scopedSnapshot([], bridge);
    state = mkdtempSync(join(tmpdir(), 'kvts-ssh-'));
    chmodSync(state, 0o755);
    const paths = statePaths(state);
    node = new LocalNode({
      paths,
      podNetwork: { subnet, bridge },
      log: (c, m) => {
        logs.push(`${c}: ${m}`);
        if (process.env.KUBEVIRT_TS_NODE_LOG) console.log(`${c}: ${m}`);
      },
    });
    await node.start();
    new ImageStore(paths.images).import('kubevirt-ts/tiny-guest', guest ?? '');
    peerNet = new PodNetwork({ bridge, subnet, pluginDir: '/usr/lib/cni', dataDir: join(state, 'cni') });
    mkdirSync(join(state, 'peer'));
  }, 60_000);

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const n of [name, failedName]) {
      await node?.store.delete(VirtualMachineType, n, { namespace: 'default' }).catch(() => undefined);
      await node?.store
        .delete(VirtualMachineInstanceType, n, { namespace: 'default' })
        .catch(() => undefined);
    }
    // The pod objects go at once; their namespaces when the pod runtime has torn them down.
    await waitFor(
      'launcher pods and their namespaces to go',
      async () =>
        (await node.store.list(PodType, { namespace: 'default' })).items.length === 0 &&
        !netSnapshot().netns.some((n) => launcherNs.includes(n)),
      240_000,
    ).catch(() => undefined);
    await peerNet?.tearDown(peerUid, join(state, 'peer')).catch(() => undefined);
    await node?.stop();
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // never made
    }
    rmSync(state, { recursive: true, force: true });
    expect(scopedSnapshot([...launcherNs, netnsName(peerUid)], bridge)).toEqual(scopedBefore);
  }, 180_000);

  // Asynchronous: the local API the CLI talks to is served by this process.
  const cli = (args: string[], timeout?: number) => runVirtctl(virtctl, state, args, timeout);

  it('reaches the guest by port-forward, ssh and scp; a held connection survives a handler restart; deletion leaves nothing', {
    timeout: 600_000,
  }, async () => {
    const key = join(state, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kvts-test', '-f', key]);
    const pub = readFileSync(`${key}.pub`, 'utf8').trim();

    const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
    vm.metadata.name = name;
    vm.spec.template.metadata.labels['kubevirt.io/vm'] = name;
    vm.spec.template.spec.terminationGracePeriodSeconds = 5;
    vm.spec.template.spec.domain.devices.disks = [{ name: 'cloudinitdisk', disk: { bus: 'virtio' } }];
    vm.spec.template.spec.volumes = [
      {
        name: 'cloudinitdisk',
        cloudInitNoCloud: { userData: `#cloud-config\nssh_authorized_keys:\n  - ${pub}\n` },
      },
    ];
    const file = join(state, 'vm.yaml');
    writeFileSync(file, stringify(vm));
    await applyObjects(
      node.store,
      await loadAndAdmit([file], new ImageStore(statePaths(state).images), true),
    );

    const pod = await waitFor(
      'the launcher pod with its pod IP',
      async () => {
        const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
        return pods.items.find((p) => p.metadata?.name?.includes(name) && p.status?.podIP);
      },
      120_000,
    );
    const podIP = pod.status?.podIP ?? '';
    const lns = netnsName(pod.metadata?.uid ?? '');
    launcherNs.push(lns);
    await waitFor(
      'VMI Running',
      async () =>
        (
          await node.store.get<VirtualMachineInstance & KubeObject>(
            VirtualMachineInstanceType,
            name,
            'default',
          )
        ).status?.phase === 'Running',
      240_000,
    );
    const sockets = podEmptyDirPath(statePaths(state).pods, pod.metadata?.uid ?? '', 'sockets');
    const console_ = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 60_000);
    try {
      const out = await console_.waitFor(/KUBEVIRT-TS-GUEST-SSH [^\n]*\n/, 300_000);
      expect(out).not.toContain('KUBEVIRT-TS-GUEST-SSH failed');
      expect(out).toMatch(/KUBEVIRT-TS-GUEST-SSH dropbear tcp\/22 authorized_keys=1/);
    } finally {
      console_.close();
    }

    // virtctl port-forward (the CLI, local mode) to the guest's echo server.
    const pf = spawn(
      process.execPath,
      [virtctl, 'port-forward', '--state-dir', state, `vmi/${name}`, '0:8080'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    children.push(pf);
    const pfOut = output(pf);
    const m = await waitFor(
      'port-forward to listen',
      () => /Forwarding from 127\.0\.0\.1:(\d+)/.exec(pfOut()) ?? undefined,
      30_000,
    );
    const local = Number(m[1]);
    expect(await echoThrough(local, 100_000)).toBe(100_000);
    pf.kill('SIGINT');
    process.stdout.write(
      `port-forward: 127.0.0.1:${local} -> vmi/${name}:8080: sent 100000, echoed 100000\n`,
    );

    // virtctl ssh: a command in the guest, its output read here.
    const sshOpts = [
      '-i',
      key,
      '-t',
      '-o StrictHostKeyChecking=no',
      '-t',
      '-o UserKnownHostsFile=/dev/null',
      '-t',
      '-o BatchMode=yes',
      '-t',
      '-o LogLevel=ERROR',
    ];
    const said = await cli([
      'ssh',
      `root@vmi/${name}`,
      ...sshOpts,
      '-c',
      'echo "uid=$(id -u) host=$(hostname) sum=$((6 * 7))"; grep ^ID= /etc/os-release',
    ]);
    expect(said).toMatch(/^uid=0 host=\S+ sum=42$/m);
    expect(said).toContain('ID=kubevirt-ts-guest');
    process.stdout.write(`ssh root@vmi/${name}: ${said.trim().replace(/\n/g, ' | ')}\n`);
    // A key the guest does not know is refused.
    const other = join(state, 'other');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    await expect(cli(['ssh', `root@vmi/${name}`, ...sshOpts, '-i', other, '-c', 'true'])).rejects.toThrow(
      /Permission denied/,
    );

    // virtctl scp both ways (OpenSSH's scp speaks SFTP; the guest has sftp-server).
    const up = randomBytes(150_000);
    writeFileSync(join(state, 'up.bin'), up);
    await cli(['scp', ...sshOpts, join(state, 'up.bin'), `root@vmi/${name}:/tmp/up.bin`]);
    const sum = await cli(['ssh', `root@vmi/${name}`, ...sshOpts, '-c', 'sha256sum /tmp/up.bin']);
    expect(sum.split(' ')[0]).toBe(
      (await import('node:crypto')).createHash('sha256').update(up).digest('hex'),
    );
    await cli(['scp', ...sshOpts, `root@vmi/${name}:/tmp/up.bin`, join(state, 'down.bin')]);
    expect(readFileSync(join(state, 'down.bin')).equals(up)).toBe(true);
    await cli(['scp', ...sshOpts, `root@vmi/${name}:/etc/hostname`, join(state, 'hostname')]);
    expect(readFileSync(join(state, 'hostname'), 'utf8').trim()).toMatch(/^\S+$/);
    process.stdout.write(`scp: 150000 bytes to the guest (sha256 matches there) and back (identical)\n`);

    // A connection from another pod to the guest through the pod IP, held across a
    // virt-handler restart.
    await peerNet.setUp(peerUid, join(state, 'peer'));
    const hold = spawn(
      'nsenter',
      [`--net=/run/netns/${netnsName(peerUid)}`, '--', process.execPath, '-e', HOLD, podIP, '8080'],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    children.push(hold);
    const holdOut = output(hold);
    await waitFor('the held connection', () => holdOut().includes('connected'), 30_000);
    hold.stdin?.write('30000\n');
    await waitFor('the first echo', () => holdOut().includes('echoed 30000'), 60_000);
    const natCounter = () => {
      const j = JSON.parse(inNs(lns, 'nft', ['-j', 'list', 'chain', 'ip', 'kubevirt_nat', 'prerouting'])) as {
        nftables: { rule?: { expr: { counter?: { packets: number } }[] } }[];
      };
      const rule = j.nftables.find((x) => x.rule)?.rule;
      return rule?.expr.find((e) => e.counter)?.counter?.packets ?? -1;
    };
    expect(natCounter()).toBeGreaterThanOrEqual(1);
    const counted = natCounter();
    const oldHandler = node.handler;
    await node.restartHandler();
    expect(node.handler).not.toBe(oldHandler);
    await waitFor('the new virt-handler to be ready', () => node.handler.isReady(), 120_000);
    // The new handler reaches the guest's launcher (its domain is running).
    const domain = await waitFor(
      'the new virt-handler to reach the launcher',
      async () => {
        const l = await node.handler.launcherOf('default', name).catch(() => undefined);
        return ((await l?.client.getDomain()) as { state?: string } | undefined) ?? undefined;
      },
      60_000,
    );
    expect(domain.state).toBe('running');
    // It takes the running VMI over without redoing phase 1 (phase 1 runs for a pod whose
    // domain is not running yet): the NAT rules, and the connection's conntrack entry, stay.
    expect(natCounter()).toBe(counted);
    hold.stdin?.write('40000\n');
    await waitFor('the echo after the restart', () => /echoed 40000/.test(holdOut()), 60_000);
    expect(holdOut()).not.toMatch(/closed|error/);
    hold.stdin?.end();
    await peerNet.tearDown(peerUid, join(state, 'peer'));
    process.stdout.write(
      `held connection ${netnsName(peerUid)} -> ${podIP}:8080: 30000 bytes echoed, virt-handler restarted (NAT rules untouched), 40000 more echoed on the same connection\n`,
    );

    // Deleting the VM leaves nothing in the host's network configuration.
    await node.store.delete(VirtualMachineType, name, { namespace: 'default' });
    await waitFor('the launcher pod namespace to go', () => !netSnapshot().netns.includes(lns), 120_000);
    await waitFor(
      'the launcher pod to go',
      async () =>
        !(await node.store.list(PodType, { namespace: 'default' })).items.some((p) =>
          p.metadata?.name?.includes(name),
        ),
      120_000,
    );
    const after = netSnapshot();
    expect(scopedSnapshot([lns], bridge)).toMatchObject({ netns: [], bridgePorts: [] });
    expect(after.nftTables).toEqual(before.nftTables);
    const leases = join(state, 'cni', 'kubevirt-ts');
    expect(existsSync(join(leases, podIP))).toBe(false);
    process.stdout.write(
      `after deleting ${name}: no ${lns}, no port on ${bridge}, lease ${podIP} released, project nftables tables on the host unchanged (${after.nftTables.length}), links ${before.links.length} -> ${after.links.length} (other tests run alongside)\n`,
    );
  });

  it('a VMI whose start fails leaves nothing in the host network configuration once deleted', {
    timeout: 600_000,
  }, async () => {
    const nft0 = netSnapshot().nftTables;
    const ports0 = scopedSnapshot([], bridge).bridgePorts;
    const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
    const vmi = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: failedName, namespace: 'default' },
      spec: {
        ...vm.spec.template.spec,
        // A kernel the image does not have: QEMU fails to start, after the pod network is set up.
        domain: {
          ...vm.spec.template.spec.domain,
          firmware: {
            kernelBoot: {
              ...vm.spec.template.spec.domain.firmware.kernelBoot,
              container: {
                ...vm.spec.template.spec.domain.firmware.kernelBoot.container,
                kernelPath: '/no-such-vmlinuz',
              },
            },
          },
        },
      },
    };
    const file = join(state, 'failed.yaml');
    writeFileSync(file, stringify(vmi));
    await applyObjects(
      node.store,
      await loadAndAdmit([file], new ImageStore(statePaths(state).images), true),
    );
    const pod = await waitFor(
      'the launcher pod with its pod IP',
      async () => {
        const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
        return pods.items.find((p) => p.metadata?.name?.includes(failedName) && p.status?.podIP);
      },
      120_000,
    );
    const lns = netnsName(pod.metadata?.uid ?? '');
    launcherNs.push(lns);
    const podIP = pod.status?.podIP ?? '';
    // Phase 1 ran (the pod's NAT table exists) and the start failed.
    await waitFor(
      'the pod network set up',
      () => {
        try {
          return inNs(lns, 'nft', ['list', 'tables']).includes('kubevirt_nat');
        } catch {
          return false;
        }
      },
      // Under the full suite's load phase 1 can take minutes to come round.
      240_000,
    );
    const failed = await waitFor(
      'the start to fail',
      () => logs.find((l) => l.includes(`default/${failedName}`) && l.includes('sync:')),
      240_000,
    );
    expect(failed).toContain('could not open kernel file');
    process.stdout.write(`failed start of ${failedName}: ${failed.slice(0, 300)}\n`);
    await node.store.delete(VirtualMachineInstanceType, failedName, { namespace: 'default' });
    await waitFor('the launcher pod namespace to go', () => !netSnapshot().netns.includes(lns), 120_000);
    expect(scopedSnapshot([lns], bridge)).toMatchObject({ netns: [], bridgePorts: ports0 });
    expect(netSnapshot().nftTables).toEqual(nft0);
    expect(existsSync(join(state, 'cni', 'kubevirt-ts', podIP))).toBe(false);
    process.stdout.write(
      `after deleting ${failedName}: no ${lns}, no port on ${bridge}, lease ${podIP} released\n`,
    );
  });
});
