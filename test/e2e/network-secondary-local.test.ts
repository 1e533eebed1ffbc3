/**
 * A secondary network in local mode end to end: `LocalNode` (what `kubevirt-ts up` runs),
 * examples/nad-bridge.yaml (a NetworkAttachmentDefinition: the CNI bridge plugin on a
 * bridge the test makes, with a host address, its own subnet, no gateway) and
 * examples/vm-tiny-multus.yaml (the tiny guest's one NIC on that network, bridge binding).
 * Applied before the definition exists, the VMI gets no pod, Synchronized=False and a
 * FailedCreate event naming it, and nothing is made on the host; once the definition is
 * applied, virt-controller's networks annotation makes the pod runtime attach the network
 * as pod<hash>, phase 1 binds it, the launcher's DHCP server leases its address to the
 * guest. Real TCP with the host side of the bridge both ways; deleting the VM removes the
 * namespace and the veths on both bridges.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { applyObjects, loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import { podInterfaceName } from '../../src/controllers/common/multus';
import type { Pod } from '../../src/controllers/common/pod';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { netnsName } from '../../src/controllers/local/pod-runtime/pod-network';
import {
  EventType,
  PodType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { SerialConsole } from '../support/guest';
import { canTestNetworking, netSnapshot, networkGuestDir, scopedSnapshot } from '../support/net-snapshot';
import { ECHO_CLIENT, ECHO_SERVER, repoRoot } from '../support/netns-process';
import { cliBuilt, e2eRun, waitFor } from './node-harness';

const guest = networkGuestDir();
const run = e2eRun('secondary networks in local mode', () =>
  !canTestNetworking()
    ? 'needs root and /usr/lib/cni (containernetworking-plugins)'
    : !cliBuilt()
      ? 'npm run build first'
      : !guest
        ? 'no tiny guest of recipe 7 or later (networking): run scripts/guest/build.sh'
        : undefined,
);

describe.runIf(run)('secondary network in local mode (multus, bridge binding, real guest)', () => {
  const tag = process.pid % 10000;
  const podBridge = `kvtsg${tag}`;
  const blueBridge = `kvtsy${tag}`;
  const blue = '10.250.92';
  const name = `mul-${process.pid}`;
  let state: string;
  let node: LocalNode;
  let hostServer: ChildProcess | undefined;
  let hostOut = '';
  let before: unknown[];
  /** After the test's own bridge is up: what a VMI waiting for its definition must not change. */
  let ready: unknown[];
  let launcherNs = '';
  const snapshot = () => [scopedSnapshot([launcherNs], podBridge), scopedSnapshot([], blueBridge)];
  // biome-ignore lint/suspicious/noExplicitAny: a parsed example manifest, edited in place
  const yamlFile = (file: string, edit: (o: Record<string, any>) => void) => {
    const o = parse(readFileSync(join(repoRoot, 'examples', file), 'utf8'));
    edit(o);
    const out = join(state, file);
    writeFileSync(out, stringify(o));
    return out;
  };

  beforeAll(async () => {
    before = snapshot();
    state = mkdtempSync(join(tmpdir(), 'kvts-mul-'));
    chmodSync(state, 0o755);
    const paths = statePaths(state);
    node = new LocalNode({
      paths,
      podNetwork: { subnet: '10.244.93.0/24', bridge: podBridge },
      log: process.env.KUBEVIRT_TS_NODE_LOG ? (c, m) => console.log(`${c}: ${m}`) : undefined,
    });
    await node.start();
    new ImageStore(paths.images).import('kubevirt-ts/tiny-guest', guest ?? '');
    // The host side of the secondary network.
    execFileSync('ip', ['link', 'add', blueBridge, 'type', 'bridge']);
    execFileSync('ip', ['addr', 'add', `${blue}.1/24`, 'dev', blueBridge]);
    execFileSync('ip', ['link', 'set', blueBridge, 'up']);
    hostServer = spawn(process.execPath, ['-e', ECHO_SERVER.replace("'0.0.0.0'", `'${blue}.1'`), '7072'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    hostServer.stdout?.on('data', (d) => {
      hostOut += d;
    });
    await waitFor('the host-side server', () => hostOut.includes('ready'), 10_000);
    ready = snapshot();
  }, 60_000);

  afterAll(async () => {
    hostServer?.kill('SIGKILL');
    await node?.store.delete(VirtualMachineType, name, { namespace: 'default' }).catch(() => undefined);
    await waitFor(
      'launcher pods to go',
      async () => (await node.store.list(PodType, { namespace: 'default' })).items.length === 0,
      90_000,
    ).catch(() => undefined);
    await node?.stop();
    await new Promise((r) => setTimeout(r, 500));
    for (const b of [podBridge, blueBridge]) {
      try {
        execFileSync('ip', ['link', 'del', b], { stdio: 'ignore' });
      } catch {
        // never made
      }
    }
    rmSync(state, { recursive: true, force: true });
    expect(snapshot()).toEqual(before);
  }, 120_000);

  it('waits for its NetworkAttachmentDefinition, then gives the guest an address on it', {
    timeout: 400_000,
  }, async () => {
    const images = new ImageStore(statePaths(state).images);
    const vmFile = yamlFile('vm-tiny-multus.yaml', (vm) => {
      vm.metadata.name = name;
      vm.spec.template.metadata.labels['kubevirt.io/vm'] = name;
      vm.spec.template.spec.terminationGracePeriodSeconds = 5;
      vm.spec.template.spec.domain.firmware.kernelBoot.kernelArgs += ` kvts.connect=${blue}.1:7072`;
    });
    const nadFile = yamlFile('nad-bridge.yaml', (nad) => {
      const config = JSON.parse(nad.spec.config);
      config.plugins[0].bridge = blueBridge;
      config.plugins[0].ipam.ranges = [
        [{ subnet: `${blue}.0/24`, rangeStart: `${blue}.10`, rangeEnd: `${blue}.20` }],
      ];
      config.plugins[0].ipam.dataDir = join(state, 'cni-blue');
      nad.spec.config = JSON.stringify(config);
    });

    // No definition yet: the VMI waits with a condition and an event naming it; no pod, nothing on the host.
    await applyObjects(node.store, await loadAndAdmit([vmFile], images, true));
    const message =
      'failed to render launch manifest: failed to locate network attachment definition default/blue-net';
    const waiting = await waitFor(
      'the VMI to report the missing definition',
      async () => {
        const v = await node.store
          .get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, name, 'default')
          .catch(() => undefined);
        return v?.status?.conditions?.find((c) => c.type === 'Synchronized' && c.status === 'False');
      },
      60_000,
    );
    expect(waiting).toMatchObject({ reason: 'FailedCreate', message });
    const events = (
      await node.store.list<KubeObject & { reason: string; message: string }>(EventType, {
        namespace: 'default',
      })
    ).items;
    expect(events).toContainEqual(
      expect.objectContaining({ reason: 'FailedCreate', message: `Error creating pod: ${message}` }),
    );
    expect((await node.store.list(PodType, { namespace: 'default' })).items).toEqual([]);
    expect(snapshot()).toEqual(ready);

    // The definition, applied as a user would: the pod follows.
    expect(await applyObjects(node.store, await loadAndAdmit([nadFile], images, true))).toEqual([
      { kind: 'NetworkAttachmentDefinition', namespace: 'default', name: 'blue-net', action: 'created' },
    ]);
    const pod = await waitFor(
      'the launcher pod running',
      async () => {
        const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
        return pods.items.find((p) => p.metadata?.name?.includes(name) && p.status?.podIP);
      },
      120_000,
    );
    launcherNs = netnsName(pod.metadata?.uid ?? '');
    const podIf = podInterfaceName('blue');
    expect(JSON.parse(pod.metadata?.annotations?.['k8s.v1.cni.cncf.io/networks'] ?? '[]')).toEqual([
      { name: 'blue-net', namespace: 'default', interface: podIf },
    ]);
    const vmi = await waitFor(
      'VMI Running with the leased address in its status',
      async () => {
        const v = await node.store.get<VirtualMachineInstance & KubeObject>(
          VirtualMachineInstanceType,
          name,
          'default',
        );
        return v.status?.phase === 'Running' && v.status?.interfaces?.[0]?.ipAddress ? v : undefined;
      },
      300_000,
    );
    const sockets = podEmptyDirPath(statePaths(state).pods, pod.metadata?.uid ?? '', 'sockets');
    const console_ = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 60_000);
    try {
      const out = await console_.waitFor(/KUBEVIRT-TS-GUEST-SENT [^\n]*reply_bytes=\d+\r?\n/, 240_000);
      expect(out).toMatch(
        new RegExp(`KUBEVIRT-TS-GUEST-NET eth0=${blue.replaceAll('.', '\\.')}\\.10/24 router=none mtu=1500`),
      );
      expect(out).toContain(`KUBEVIRT-TS-GUEST-SENT bytes=65536 to=${blue}.1:7072 reply_bytes=65536`);
    } finally {
      console_.close();
    }
    await waitFor(
      'the host side to count the bytes',
      () => hostOut.includes(`from ${blue}.10 got 65536`),
      30_000,
    );
    const echoed = execFileSync(process.execPath, ['-e', ECHO_CLIENT, `${blue}.10`, '8080', '200000'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(echoed.trim()).toBe('echoed 200000');
    expect(vmi.status?.interfaces?.[0]).toMatchObject({
      name: 'blue',
      ipAddress: `${blue}.10`,
      podInterfaceName: podIf,
    });
    process.stdout.write(
      `local mode VM ${name} on NetworkAttachmentDefinition blue-net (${blueBridge}, ${blue}.0/24): guest eth0 leased ${blue}.10; guest -> ${blue}.1:7072 sent 65536 echoed 65536; host ${blue}.1 -> ${blue}.10:8080 sent 200000 echoed 200000\n`,
    );

    await node.store.delete(VirtualMachineType, name, { namespace: 'default' });
    await waitFor(
      'the launcher pod namespace to go',
      () => !netSnapshot().netns.includes(launcherNs),
      120_000,
    );
  });
});
