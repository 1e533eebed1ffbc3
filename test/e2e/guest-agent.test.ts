/**
 * The guest agent end to end, with Debian's real qemu-ga in the tiny guest: a VM on the
 * embedded store -> launcher -> libvirt -> the guest boots and its agent connects to
 * the org.qemu.guest_agent.0 channel -> the launcher reads it through libvirt -> the
 * handler writes AgentConnected, status.guestOSInfo (the guest's /etc/os-release as the
 * guest build wrote it, and the real kernel release) and the interfaces; GetGuestInfo and
 * `virtctl guestosinfo` (local mode) answer the agent's info. One boot for all of it.
 *
 * There is no pod network here, so the guest has no NIC: the only interface the agent
 * reports is `lo` (127.0.0.1), which the launcher's report carries and VMI status leaves
 * out, as upstream does.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceGuestAgentInfo,
} from '../../src/api/generated/types';
import { serveLocalApi } from '../../src/cli/local/local-api';
import type { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import { LauncherClient, launcherSocketPath } from '../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../src/controllers/launcher-protocol/domain-report';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { serveEmbeddedStore } from '../../src/controllers/runtime/embedded/server';
import type { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER, guestDir, kernelVersion } from '../support/guest';
import {
  cliEntry,
  type EmbeddedNode,
  e2eRun,
  type NodeHarness,
  startEmbeddedNode,
  tinyGuestVm,
  waitFor,
} from './node-harness';

const osReleasePath = join(guestDir, 'os-release');
const run = e2eRun('guest agent end to end (embedded store, qemu-ga in the guest)', () =>
  existsSync(osReleasePath)
    ? undefined
    : `the test guest predates qemu-ga (no ${osReleasePath}): run scripts/guest/build.sh`,
);

function osRelease(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(osReleasePath, 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (m) out[m[1] as string] = (m[2] as string).replace(/^"(.*)"$/, '$1');
  }
  return out;
}

describe.runIf(run)('guest agent end to end with a real qemu-ga', () => {
  const ns = 'default';
  const name = `e2e-ga-${process.pid}`;
  const domain = `${ns}_${name}`;
  let store: EmbeddedStore;
  let embedded: EmbeddedNode | undefined;
  let node: NodeHarness;
  let podUid = '';
  let launcher: LauncherClient | undefined;

  beforeAll(async () => {
    embedded = await startEmbeddedNode(`node-ga-${process.pid}`);
    ({ store, node } = embedded);
  }, 60_000);

  afterAll(async () => {
    launcher?.close();
    await embedded?.close(domain);
  }, 60_000);

  it('the agent connects: AgentConnected True, guestOSInfo from the guest, lo with 127.0.0.1 in the launcher report', async () => {
    await store.create(VirtualMachineType, tinyGuestVm(name, ns) as KubeObject);
    const scheduled = await waitFor('the VMI scheduled to the node', async () => {
      const v = await node.getVmi(ns, name);
      return v.status?.nodeName === node.o.nodeName ? v : undefined;
    });
    const pod = await waitFor('the launcher pod', () => node.podOf(scheduled));
    podUid = pod.metadata?.uid ?? '';
    const console_ = await node.console(pod);
    try {
      await console_.waitFor(BOOT_MARKER, 180_000);
    } finally {
      console_.close();
    }

    const vmi: VirtualMachineInstance = await waitFor(
      'AgentConnected on the VMI',
      async () => {
        const v = await node.getVmi(ns, name);
        return v.status?.conditions?.some((c) => c.type === 'AgentConnected' && c.status === 'True')
          ? v
          : undefined;
      },
      120_000,
    );
    expect(vmi.status?.phase).toBe('Running');
    const os = osRelease();
    expect(vmi.status?.guestOSInfo).toMatchObject({
      id: os.ID,
      name: os.NAME,
      prettyName: os.PRETTY_NAME,
      version: os.VERSION,
      versionId: os.VERSION_ID,
      kernelRelease: kernelVersion(),
      machine: 'x86_64',
    });
    expect(vmi.status?.guestOSInfo?.kernelVersion).toMatch(/^#1 SMP/);
    // No NIC (no pod network): lo is the agent's only interface, and status leaves it out.
    expect(vmi.status?.interfaces).toEqual([]);

    const sock = launcherSocketPath(node.podsRoot, podUid);
    launcher = new LauncherClient(join(shortDir(dirname(sock)), basename(sock)), { timeoutMs: 30_000 });
    const d = (await launcher.getDomain()) as LauncherDomain;
    expect(d.guestAgent?.connected).toBe(true);
    expect(d.guestAgent?.hostname).toBe('kubevirt-ts-guest');
    const lo = d.guestAgent?.interfaces?.find((i) => i.name === 'lo');
    expect(lo?.ipAddresses).toContainEqual({ address: '127.0.0.1', type: 'ipv4', prefix: 8 });

    // One handler write for Running and one when the agent connected (at most one more,
    // if the agent's first answer came in two parts); none while nothing changes.
    const writes = node.handlerWrites.filter((n) => n === name).length;
    expect(writes).toBeGreaterThanOrEqual(2);
    expect(writes).toBeLessThanOrEqual(3);
  }, 300_000);

  it("GetGuestInfo answers upstream's VirtualMachineInstanceGuestAgentInfo from the real agent", async () => {
    expect(launcher, 'the first test booted the guest').toBeDefined();
    const info = (await launcher?.getGuestInfo()) as VirtualMachineInstanceGuestAgentInfo;
    const os = osRelease();
    expect(info.guestAgentVersion).toMatch(/^7\.2\./);
    expect(info.hostname).toBe('kubevirt-ts-guest');
    expect(info.timezone).toBe('UTC, 0');
    expect(info.os).toMatchObject({ id: os.ID, versionId: os.VERSION_ID, kernelRelease: kernelVersion() });
    expect(info.supportedCommands).toContainEqual({ name: 'guest-get-osinfo', enabled: true });
    // The initramfs has no utmp and no block-device filesystems.
    expect(info.userList).toBeUndefined();
    expect(info.fsInfo).toEqual({ disks: [] });
  });

  it('virtctl guestosinfo (local mode) prints the same info', async () => {
    expect(podUid, 'the first test booted the guest').not.toBe('');
    const stateDir = mkdtempSync(join(tmpdir(), 'kvts-ga-state-'));
    const paths = statePaths(stateDir);
    // The parts of a running `kubevirt-ts up` that virtctl talks to: the store socket and
    // the local subresource API, over this node's store, handler and pods.
    const storeServer = await serveEmbeddedStore(store, paths.storeSocket);
    const localNode = {
      store,
      handler: node.handler,
      nodeName: node.o.nodeName,
      o: { paths: { ...paths, pods: node.podsRoot } },
    } as unknown as LocalNode;
    const api = await serveLocalApi(localNode, paths.apiSocket);
    try {
      const virtctl = join(dirname(cliEntry()), 'virtctl.js');
      // Asynchronously: the API it calls is served by this process.
      const res = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          [virtctl, 'guestosinfo', name, '--state-dir', stateDir],
          { encoding: 'utf8', timeout: 60_000 },
          (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout, stderr }),
        );
      });
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
      const printed = JSON.parse(res.stdout) as VirtualMachineInstanceGuestAgentInfo;
      expect(printed.hostname).toBe('kubevirt-ts-guest');
      expect(printed.os?.id).toBe(osRelease().ID);
      expect(printed.os?.kernelRelease).toBe(kernelVersion());
      expect(printed.guestAgentVersion).toMatch(/^7\.2\./);
    } finally {
      await api.close();
      await storeServer.close();
      rmSync(stateDir, { recursive: true, force: true });
    }
  }, 120_000);
});
