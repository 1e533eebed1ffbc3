/**
 * `virtctl stop` of the booted tiny guest on the real one-node cluster, run by
 * vm-tiny.test.ts after its boot, traffic and restart cases: the launcher pod and QEMU are
 * gone, the VM is Stopped, and the stop's events (upstream's ShuttingDown, Deleted,
 * Stopped) stay on the deleted VMI.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { repoRoot } from '../../scripts/gen-api';
import { waitFor } from '../support/wait';

/** What the stop case reads from vm-tiny.test.ts once its boot case ran. */
export interface StopCaseContext {
  info: ClusterInfo;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  kubectl: (...args: string[]) => string;
  namespace: string;
  vm: string;
  launcher: V1Pod;
  qemuPid: number;
  bootedVmiUid: string;
}

/** Registers the stop case; `ctx` is read when it runs. */
export function registerStopCase(ctx: () => StopCaseContext): void {
  it('virtctl stop stops it: the launcher pod and QEMU are gone, the VM is Stopped', async () => {
    const { info, core, custom, kubectl, namespace: NS, vm: VM, launcher, qemuPid, bootedVmiUid } = ctx();
    expect(launcher, 'the boot test ran').toBeDefined();
    const out = execFileSync(
      process.execPath,
      [
        join(repoRoot, 'dist', 'cli', 'virtctl.js'),
        'stop',
        VM,
        '-n',
        NS,
        '--kubeconfig',
        info.kubeconfigPath,
      ],
      { encoding: 'utf8' },
    );
    expect(out).toBe(`VM ${VM} was scheduled to stop\n`);
    await waitFor(
      'launcher pod gone',
      async () => {
        const pods = (
          await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' })
        ).items;
        return pods.length === 0;
      },
      180_000,
      1_000,
    );
    const vm = await waitFor(
      'VM Stopped',
      async () => {
        const v = (await custom.getNamespacedCustomObject({
          group: 'kubevirt.io',
          version: 'v1',
          namespace: NS,
          plural: 'virtualmachines',
          name: VM,
        })) as { status?: { printableStatus?: string; ready?: boolean } };
        return v.status?.printableStatus === 'Stopped' ? v : undefined;
      },
      120_000,
      1_000,
    );
    expect(vm.status?.ready).not.toBe(true);
    expect(() => readFileSync(`/proc/${qemuPid}/status`)).toThrow(/ENOENT/);
    // The stop's events stay on the (deleted) VMI: upstream's ShuttingDown, Deleted, Stopped.
    const reasons = await waitFor(
      "the stop's events on the VMI",
      () => {
        const list = JSON.parse(
          kubectl(
            'get',
            'events',
            '-n',
            NS,
            '--field-selector',
            `involvedObject.uid=${bootedVmiUid}`,
            '-o',
            'json',
          ),
        ) as { items: { reason?: string; source?: { component?: string } }[] };
        const handler = list.items.filter((e) => e.source?.component === 'virt-handler').map((e) => e.reason);
        return ['ShuttingDown', 'Deleted', 'Stopped'].every((r) => handler.includes(r)) ? handler : undefined;
      },
      60_000,
      1_000,
    );
    expect(reasons).toEqual(
      expect.arrayContaining(['Created', 'Started', 'ShuttingDown', 'Deleted', 'Stopped']),
    );
  }, 400_000);
}
