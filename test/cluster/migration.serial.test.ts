/**
 * Live migration between the two kubelet nodes of `up --nodes 2` (issue 26 step 2): the
 * components installed from the rendered manifests (each handler with its migration proxy:
 * its pod IP, the serving and client certificates virt-certs makes), the tiny guest
 * (containerDisk, masquerade, no shutdown grace) Running on node A, then a
 * VirtualMachineInstanceMigration. The target launcher pod on node B accepts the guest
 * in its own libvirt daemon; libvirt's connection, QEMU's stream and the containerDisk's
 * block stream go from the source pod's sockets through both handlers over mutual TLS to
 * the target pod's sockets. Asserted: the migration Succeeded from A to B, node B's
 * handler carried bytes from A over TLS on each of the three streams (the disks' at least
 * the block the guest wrote on A, which it reads back on B), the VMI is on B, the
 * guest did not boot again (its boot marker once, on A's serial log, none on B's; its uptime
 * on B older than the boot seen on A) and its console answers on B. Prints `BENCH migration total_ms=<n>` (the VMIM's creation to
 * Succeeded). Then `kubectl drain` of node B (drain-case.ts) moves the VM back to A with
 * `disableTLS` (node A's handler reports the streams carried by the kernel relay), a NIC
 * is hotplugged and unplugged (nic-hotplug-case.ts), CPU and memory are hotplugged
 * (cpu-hotplug-case.ts), and post-copy (post-copy-case.ts) moves it again.
 * Serial: its own cluster.
 */

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { down } from '../../scripts/cluster/down';
import { leftovers } from '../../scripts/cluster/host-cleanup';
import { up } from '../../scripts/cluster/up';
import { repoRoot } from '../../scripts/gen-api';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../src/api/generated/types';
import { clusterUnavailableReason, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../support/cluster';
import { componentsReady, installComponents } from '../support/cluster-install';
import { kubectlWith, patchKubeVirtArgs } from '../support/cluster-pods';
import { BOOT_MARKER } from '../support/guest';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';
import { cpuHotplugCase } from './cpu-hotplug-case';
import { drainCase } from './drain-case';
import { NIC_BRIDGE, nicHotplugCase } from './nic-hotplug-case';
import { consoleAnswers } from './operator-cluster';
import { postCopyCase } from './post-copy-case';

const why = clusterUnavailableReason();
const enabled = integration('two-node cluster', why === undefined, why ?? '');
const log = (l: string) => process.stderr.write(`[cluster] ${l}\n`);
/** consoleAnswers speaks to the default namespace. */
const NS = 'default';
const VM = 'vm-tiny-cd';
const MIGRATION = 'vm-tiny-cd-to-b';
/** What the guest writes on its disk before the migration. */
const DISK_MARK = 'KVTS-DISK-WRITTEN-ON-A';

describe.skipIf(!enabled)('live migration between two nodes', () => {
  it("moves the running tiny guest from node A to node B through the handlers' migration proxies", async () => {
    const stateDir = testStateDir();
    const info = await up({ stateDir, bridge: TEST_BRIDGE, podSubnet: TEST_POD_SUBNET, nodes: 2, log });
    const dir = mkdtempSync(join(tmpdir(), 'kvts-migration-'));
    const kubectl = kubectlWith(info.kubeconfigPath);
    const nodeA = info.nodeName;
    const nodeB = info.extraNodes?.[0]?.nodeName ?? '';
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const get = async <T>(plural: string, name: string) =>
      (await custom
        .getNamespacedCustomObject({ group: 'kubevirt.io', version: 'v1', namespace: NS, plural, name })
        .catch(() => undefined)) as T | undefined;
    const readVmi = () => get<VirtualMachineInstance>('virtualmachineinstances', VM);
    const launchers = async () =>
      (await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' })).items;
    /** The boot markers in a launcher pod's serial console log (0 when the pod is gone). */
    const markers = (pod: V1Pod, vmiUid: string) => {
      try {
        const out = kubectl(
          'exec',
          '-n',
          NS,
          pod.metadata?.name ?? '',
          '-c',
          'compute',
          '--',
          'busybox',
          'sh',
          '-c',
          `busybox grep -c ${BOOT_MARKER} /var/run/kubevirt-private/${vmiUid}/virt-serial0-log || true`,
        );
        return Number(out.trim());
      } catch {
        return 0;
      }
    };
    /** What went wrong, from both handlers and the launchers, when the migration does not succeed. */
    const diagnose = async () => {
      const pods = (
        await core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: 'kubevirt.io=virt-handler' })
      ).items;
      for (const p of [...pods, ...(await launchers())]) {
        const c = p.metadata?.labels?.['kubevirt.io'] === 'virt-handler' ? 'virt-handler' : 'compute';
        try {
          const out = kubectl(
            'logs',
            '-n',
            p.metadata?.namespace ?? '',
            p.metadata?.name ?? '',
            '-c',
            c,
            '--tail=40',
          );
          process.stderr.write(`[migration] --- ${p.metadata?.name} (${p.spec?.nodeName}) ${c}:\n${out}\n`);
        } catch (e) {
          process.stderr.write(`[migration] --- ${p.metadata?.name}: ${(e as Error).message}\n`);
        }
      }
    };
    /** Node `node`'s handler's line for migration `vmiUid`'s closed target proxies: carrier, bytes by stream. */
    const proxyReport = async (node: string, vmiUid: string) => {
      const handler = (
        await core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: 'kubevirt.io=virt-handler' })
      ).items.find((p) => p.spec?.nodeName === node);
      const closed = new RegExp(
        `migration ${vmiUid}: target proxies closed \\((TLS, OpenSSL relay|TLS|plain TCP, kernel relay|plain TCP); bytes by key port 0: (\\d+) out, \\d+ in; 49152: (\\d+) out, \\d+ in; 49153: (\\d+) out`,
        'g',
      );
      return waitFor(
        `node ${node}'s migration proxy report`,
        // The last report: an earlier, failed attempt may have closed its own proxies.
        () =>
          [
            ...kubectl(
              'logs',
              '-n',
              'kubevirt',
              handler?.metadata?.name ?? '',
              '-c',
              'virt-handler',
            ).matchAll(closed),
          ].at(-1),
        60_000,
        1_000,
      );
    };
    try {
      // The components on node A (node B only runs its handler): cordoned while installed.
      kubectl('cordon', nodeB);
      installComponents(info, dir, kubectl);
      await componentsReady(core, [nodeA, nodeB]);
      const vm = readFileSync(join(repoRoot, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8')
        .replace(
          'terminationGracePeriodSeconds: 30',
          // The drain case (drain-case.ts) evicts it: it must migrate.
          'terminationGracePeriodSeconds: 0\n      evictionStrategy: LiveMigrate',
        )
        // The hotplug case raises the sockets and the memory: template sections to change (upstream's rule).
        .replace(
          '      domain:\n',
          '      domain:\n        cpu:\n          sockets: 1\n        memory:\n          guest: 1Gi\n',
        )
        // Memory hotplug needs at least 1Gi (virtio-mem; maxGuest defaults to 4x).
        .replace('            memory: 128Mi', '            memory: 1Gi');
      writeFileSync(join(dir, 'vm.yaml'), vm);
      kubectl('apply', '-f', join(dir, 'vm.yaml'));
      const running = await waitFor(
        'the VMI Running and live-migratable on node A',
        async () => {
          const v = await readVmi();
          const migratable = v?.status?.conditions?.find((c) => c.type === 'LiveMigratable')?.status;
          return v?.status?.phase === 'Running' && migratable === 'True' ? v : undefined;
        },
        300_000,
        1_000,
      );
      expect(running.status?.nodeName).toBe(nodeA);
      expect(running.status?.migrationMethod).toBe('BlockMigration');
      kubectl('uncordon', nodeB);
      const vmiUid = running.metadata?.uid ?? '';
      const [source] = await launchers();
      expect(
        await waitFor(
          'the boot marker on node A',
          () => (markers(source, vmiUid) > 0 ? true : undefined),
          240_000,
          1_000,
        ),
      ).toBe(true);
      expect(markers(source, vmiUid)).toBe(1);
      const booted = performance.now();

      // The guest writes a block of its containerDisk (its overlay on node A) that only a
      // block migration brings to node B.
      const write = `$(echo ${DISK_MARK} | dd of=/dev/vda bs=512 seek=4096 conv=notrunc 2>/dev/null; sync; echo 7)`;
      expect(await consoleAnswers(info, VM, { expr: write, tag: 'W' })).toBe(7);

      writeFileSync(
        join(dir, 'vmim.yaml'),
        JSON.stringify({
          apiVersion: 'kubevirt.io/v1',
          kind: 'VirtualMachineInstanceMigration',
          metadata: { name: MIGRATION, namespace: NS },
          spec: { vmiName: VM },
        }),
      );
      const t0 = performance.now();
      kubectl('create', '-f', join(dir, 'vmim.yaml'));
      let done: VirtualMachineInstanceMigration;
      try {
        done = await waitFor(
          'the migration Succeeded',
          async () => {
            const m = await get<VirtualMachineInstanceMigration>(
              'virtualmachineinstancemigrations',
              MIGRATION,
            );
            if (m?.status?.phase === 'Failed')
              throw new Error(`migration Failed: ${JSON.stringify(m.status.migrationState ?? m.status)}`);
            return m?.status?.phase === 'Succeeded' ? m : undefined;
          },
          180_000,
          500,
        );
      } catch (e) {
        process.stderr.write(
          `[migration] VMI status: ${JSON.stringify((await readVmi())?.status?.migrationState)}\n`,
        );
        await diagnose();
        throw e;
      }
      const totalMs = Math.round(performance.now() - t0);
      process.stdout.write(`BENCH migration total_ms=${totalMs}\n`);
      // The final migration keeps the VMI's migration state (upstream's), written just after.
      const final = await waitFor(
        "the migration's final state",
        async () => {
          const m = await get<VirtualMachineInstanceMigration>('virtualmachineinstancemigrations', MIGRATION);
          return m?.status?.migrationState?.completed ? m : undefined;
        },
        30_000,
        500,
      );
      expect(final.status?.migrationState?.migrationUid).toBe(done.metadata?.uid);
      expect(final.status?.migrationState).toMatchObject({
        sourceNode: nodeA,
        targetNode: nodeB,
        completed: true,
      });
      expect(final.status?.migrationState?.failed ?? false).toBe(false);
      const moved = await readVmi();
      expect(moved?.status?.nodeName).toBe(nodeB);
      expect(moved?.status?.phase).toBe('Running');
      expect(moved?.metadata?.uid).toBe(vmiUid);

      // Node B's handler closed its listeners: libvirt's connection, QEMU's stream and the
      // containerDisk's block stream all came from node A over TLS, done by the image's
      // OpenSSL relay (migration-proxy/relay.ts).
      const carried = await proxyReport(nodeB, vmiUid);
      process.stderr.write(`[migration] node B's proxies: ${carried[0]}\n`);
      expect(carried[1]).toBe('TLS, OpenSSL relay');
      expect(Number(carried[2])).toBeGreaterThan(1000);
      expect(Number(carried[3])).toBeGreaterThan(1000);
      // At least the qcow2 cluster (64 KiB) the guest wrote.
      expect(Number(carried[4])).toBeGreaterThan(65536);

      // The guest did not boot again: its one boot marker was on node A's console; node B's has none.
      const target = (await launchers()).find((p) => p.spec?.nodeName === nodeB);
      if (!target) throw new Error('no launcher pod on node B');
      expect(markers(target, vmiUid)).toBe(0);
      // Its console answers on node B (virtctl console through virt-api and node B's handler)
      // with an uptime older than the boot seen on node A: the same guest, not a new boot.
      const uptime = await consoleAnswers(info, VM, {
        // The shell's own parameter expansion (the guest's busybox), seconds before the dot.
        expr: `$(read u r </proc/uptime; echo \${u%.*})`,
        tag: 'MIG',
      });
      expect(uptime).toBeGreaterThanOrEqual(Math.floor((performance.now() - booted) / 1000) - 1);
      // The block it wrote on node A, read from the disk on node B (the page cache dropped first).
      const read = `$(echo 3 >/proc/sys/vm/drop_caches; dd if=/dev/vda bs=512 skip=4096 count=1 2>/dev/null | grep -c ${DISK_MARK})`;
      expect(await consoleAnswers(info, VM, { expr: read, tag: 'R' })).toBe(1);
      process.stderr.write(`[migration] ${nodeA} -> ${nodeB} in ${totalMs} ms\n`);

      // Then node B drained: the VM goes back to node A (drain-case.ts).
      const ms = final.status?.migrationState;
      const unlimited = {
        bytes: Number(carried[3]),
        seconds: (Date.parse(ms?.endTimestamp ?? '') - Date.parse(ms?.startTimestamp ?? '')) / 1000,
      };
      const ctx = {
        info,
        dir,
        kubectl,
        core,
        custom,
        ns: NS,
        vm: VM,
        nodeA,
        nodeB,
        markers,
        booted,
        unlimited,
      };
      // The drain's migration (B to A) with disableTLS: the handlers hand each plain
      // connection to the kernel relay (migration-proxy/relay.ts) instead of copying it in Node.
      // virt-controller copies disableTLS into each migration at hand-over and both handlers
      // follow that copy: each change gets 3 s to reach the controller before the next
      // migration, so the drain's runs plain and the NIC case's with TLS as asserted.
      const disableTls = async (on: boolean) => {
        kubectl(...patchKubeVirtArgs({ spec: { configuration: { migrations: { disableTLS: on } } } }));
        await new Promise((r) => setTimeout(r, 3_000));
      };
      await disableTls(true);
      await drainCase(ctx);
      const plain = await proxyReport(nodeA, vmiUid);
      process.stderr.write(`[migration] node A's proxies after the drain: ${plain[0]}\n`);
      expect(plain[1]).toBe('plain TCP, kernel relay');
      expect(Number(plain[3])).toBeGreaterThan(1_000_000);
      await disableTls(false);
      // Then a NIC plugged and unplugged through migrations (nic-hotplug-case.ts).
      await nicHotplugCase({ info, dir, kubectl, core, custom, ns: NS, vm: VM, markers }).catch(async (e) => {
        await diagnose();
        throw e;
      });
      // Then CPU and memory hotplug through migrations to bigger pods (cpu-hotplug-case.ts).
      await cpuHotplugCase({ info, kubectl, core, custom, ns: NS, vm: VM, markers, booted });
      // Last (its guest keeps dirtying memory): a guest dirtying memory faster than a
      // policy's bandwidth, aborted without post-copy, moved by post-copy with it
      // (post-copy-case.ts).
      await postCopyCase(ctx);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
      // The NIC case's bridge, where the bridge plugin made it in the host's namespace.
      try {
        execFileSync('ip', ['link', 'del', NIC_BRIDGE], { stdio: 'ignore' });
      } catch {
        // not there
      }
      expect(left).toEqual([]);
    }
    expect(leftovers(stateDir, TEST_BRIDGE)).toEqual([]);
  }, 1_200_000);
});
