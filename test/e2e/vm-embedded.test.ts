/**
 * End to end on the embedded store, one node: a VM with runStrategy Always -> the VMI
 * controller's launcher Pod -> the local pod runtime runs the launcher as a process ->
 * virt-handler syncs it -> the tiny guest boots under emulation (boot marker read from
 * the console socket) -> VMI Running -> VM Running. Then the handler and the pod runtime
 * are restarted with the guest running (no second boot), and the VM is stopped: ACPI
 * shutdown, VMI Succeeded, pod deleted, launcher gone, domain gone, VM Stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import type { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import { PodType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER, POWEROFF_MARKER, type SerialConsole } from '../support/guest';
import {
  domainExists,
  type EmbeddedNode,
  e2eRun,
  processAlive as isAlive,
  type NodeHarness,
  startEmbeddedNode,
  tinyGuestVm,
  waitFor,
} from './node-harness';

const run = e2eRun('node end to end (embedded store)');

describe.runIf(run)('VM end to end on the embedded store with a real guest', () => {
  const ns = 'default';
  const name = `e2e-emb-${process.pid}`;
  const domain = `${ns}_${name}`;
  let store: EmbeddedStore;
  let node: NodeHarness;
  let console_: SerialConsole | undefined;
  let pod: Pod;
  let launcherPid = 0;

  let embedded: EmbeddedNode | undefined;

  beforeAll(async () => {
    embedded = await startEmbeddedNode(`node-emb-${process.pid}`);
    ({ store, node } = embedded);
  }, 60_000);

  afterAll(async () => {
    console_?.close();
    await embedded?.close(domain);
  }, 60_000);

  it('registers the Node with capability labels and device resources', async () => {
    const n = await store.get<
      KubeObject & {
        status?: {
          allocatable?: Record<string, string>;
          conditions?: Array<{ type: string; status: string }>;
        };
      }
    >(
      { group: '', version: 'v1', kind: 'Node', plural: 'nodes', namespaced: false, statusSubresource: true },
      node.o.nodeName,
    );
    expect(n.metadata?.labels).toMatchObject({
      'kubevirt.io/schedulable': 'true',
      'kubernetes.io/arch': 'amd64',
      'machine-type.node.kubevirt.io/q35': 'true',
    });
    expect(n.status?.allocatable).toMatchObject({
      'devices.kubevirt.io/kvm': '0',
      'devices.kubevirt.io/tun': '1000',
      'devices.kubevirt.io/vhost-net': '1000',
    });
    expect(Number(n.status?.allocatable?.cpu)).toBeGreaterThan(0);
    expect(n.status?.conditions).toContainEqual(expect.objectContaining({ type: 'Ready', status: 'True' }));
  });

  it('boots the guest: boot marker on the console, VMI Running, VM Running', async () => {
    await store.create(VirtualMachineType, tinyGuestVm(name, ns) as KubeObject);
    const vmi = await waitFor('the VMI scheduled to the node', async () => {
      const v = await node.getVmi(ns, name);
      return v.status?.nodeName === node.o.nodeName ? v : undefined;
    });
    pod = await waitFor('the launcher pod', () => node.podOf(vmi));
    launcherPid = await waitFor('the launcher process', () => node.runtime?.pidOf(pod.metadata?.uid ?? ''));
    const launcherFailed = async () => {
      const p = await node.podOf(vmi).catch(() => undefined);
      const t = p?.status?.containerStatuses?.[0]?.state?.terminated;
      return t ? `launcher exited ${t.exitCode}: ${t.message ?? ''}` : undefined;
    };
    console_ = await node.console(pod);
    await console_.waitFor(BOOT_MARKER, 180_000).catch(async (e) => {
      throw new Error(`${(e as Error).message}\n${(await launcherFailed()) ?? ''}`);
    });
    const running = await waitFor('VMI Running', async () => {
      const v = await node.getVmi(ns, name);
      return v.status?.phase === 'Running' ? v : undefined;
    });
    expect(running.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    );
    const vm = await waitFor('VM Running', async () => {
      const v = await node.getVm(ns, name);
      return v.status?.printableStatus === 'Running' && v.status.ready ? v : undefined;
    });
    expect(vm.status?.printableStatus).toBe('Running');
    expect(domainExists(domain)).toBe(true);
    // One VMI write from the handler for Scheduled -> Running, plus one when the guest's
    // agent connects (AgentConnected, guestOSInfo) if it already has; at most 6 in all.
    const vmiWrites =
      node.controllerWrites.filter((w) => w.kind === 'VirtualMachineInstance').length +
      node.handlerWrites.length;
    const handlerVmiWrites = node.handlerWrites.filter((n) => n === name).length;
    expect(handlerVmiWrites).toBeGreaterThanOrEqual(1);
    expect(handlerVmiWrites).toBeLessThanOrEqual(2);
    expect(vmiWrites).toBeLessThanOrEqual(6);
  }, 240_000);

  it('keeps the guest running across a restart of the handler, the pod runtime and the controller', async () => {
    await node.handler?.stop();
    await node.runtime?.stop();
    await node.controller?.stop();
    node.controller = node.newController();
    node.runtime = node.newRuntime();
    node.handler = node.newHandler();
    await node.controller.start();
    await node.runtime.start();
    await node.handler.start();
    // The new runtime adopted the same launcher process; the guest did not boot again.
    await waitFor('the launcher adopted', () => node.runtime?.pidOf(pod.metadata?.uid ?? '') === launcherPid);
    await new Promise((r) => setTimeout(r, 3_000));
    const vmi = await node.getVmi(ns, name);
    expect(vmi.status?.phase).toBe('Running');
    expect(console_?.output.split(BOOT_MARKER).length).toBe(2);
    // The guest still answers on its console.
    console_?.write('\n');
    const out = await console_?.run('echo $((6*7))', 60_000);
    expect(out?.trim()).toBe('42');
  }, 120_000);

  it('fails the VMI of a killed launcher, and runStrategy Always starts a new one that boots', async () => {
    const before = await node.getVmi(ns, name);
    process.kill(launcherPid, 'SIGKILL');
    await waitFor('the old VMI failed or replaced', async () => {
      const v = await node.getVmi(ns, name).catch(() => undefined);
      return !v || v.metadata?.uid !== before.metadata?.uid || v.status?.phase === 'Failed';
    });
    const vmi = await waitFor('a new VMI on the node', async () => {
      const v = await node.getVmi(ns, name).catch(() => undefined);
      return v && v.metadata?.uid !== before.metadata?.uid && v.status?.nodeName === node.o.nodeName
        ? v
        : undefined;
    });
    console_?.close();
    pod = await waitFor('the new launcher pod', () => node.podOf(vmi));
    launcherPid = await waitFor('the new launcher process', () =>
      node.runtime?.pidOf(pod.metadata?.uid ?? ''),
    );
    console_ = await node.console(pod);
    await console_.waitFor(BOOT_MARKER, 180_000);
    await waitFor(
      'the new VMI Running',
      async () => (await node.getVmi(ns, name)).status?.phase === 'Running',
    );
    await waitFor(
      'VM Running again',
      async () => (await node.getVm(ns, name)).status?.printableStatus === 'Running',
    );
  }, 300_000);

  it('stops: ACPI shutdown, VMI Succeeded, pod and launcher gone, domain gone, VM Stopped', async () => {
    const vm = await node.getVm(ns, name);
    await store.update(VirtualMachineType, {
      ...vm,
      spec: { ...vm.spec, runStrategy: 'Halted' },
    } as KubeObject);
    await console_?.waitFor(POWEROFF_MARKER, 120_000);
    const stopped = await waitFor('VM Stopped', async () => {
      const v = await node.getVm(ns, name);
      return v.status?.printableStatus === 'Stopped' ? v : undefined;
    });
    expect(stopped.status?.printableStatus).toBe('Stopped');
    await waitFor('the pod deleted', async () => {
      const pods = await store.list<Pod & KubeObject>(PodType, { namespace: ns });
      return !pods.items.some((p) => p.metadata?.uid === pod.metadata?.uid);
    });
    await waitFor('the launcher exited', () => !isAlive(launcherPid));
    await waitFor('the domain undefined', () => !domainExists(domain));
    expect(console_?.output.split(BOOT_MARKER).length).toBe(2);
    const vmis = await store.list(VmiResource, { namespace: ns });
    expect(vmis.items.filter((v) => v.metadata?.name === name)).toHaveLength(0);
  }, 180_000);
});
