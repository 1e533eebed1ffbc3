/**
 * An operator upgrade that live-migrates the workloads (issue 26, "Workload updater"), on
 * the two-node cluster: the operator manifest in the default rendering and a KubeVirt CR
 * with `workloadUpdateStrategy.workloadUpdateMethods: [LiveMigrate, Evict]`; two tiny guests
 * (containerDisk, masquerade, evictionStrategy LiveMigrate) booted once each, and a third
 * that cannot migrate (bridge binding on the pod network: LiveMigratable False,
 * evictionStrategy None). The same
 * built images tagged again in both nodes' containerd, the CR's `imageTag` changed: the
 * operator rolls the components to the new tag, virt-controller of the new image finds both
 * VMIs' launchers outdated (`kubevirt.io/outdatedLauncherImage`, the CR's
 * `status.outdatedVirtualMachineInstanceWorkloads` 3) and creates a
 * `kubevirt-workload-update-*` migration for each migratable one. Asserted: both migrations
 * Succeeded, both VMIs (the same objects) run on launchers of the new image, the label is
 * gone, the count is 0, and neither guest booted again (no boot marker on the new
 * launchers' serial logs; the console answers there). The third VMI's launcher pod is
 * evicted (upstream's Evict method: the eviction API, virt-api's eviction webhook lets an
 * evictionStrategy None VMI's pod go; a `SuccessfulEvict` event): its VM, runStrategy
 * Always, runs a new VMI on a launcher of the new image, booted once there.
 * Serial: its own cluster, up here and down at the end.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ctr } from '../../scripts/cluster/containerd';
import { down } from '../../scripts/cluster/down';
import { leftovers } from '../../scripts/cluster/host-cleanup';
import { clusterPaths } from '../../scripts/cluster/state';
import { up } from '../../scripts/cluster/up';
import { repoRoot } from '../../scripts/gen-api';
import { manifestFiles } from '../../scripts/gen-manifests';
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../src/api/generated/types';
import { defaultInstallOptions } from '../../src/controllers/virt-operator/components/index';
import { clusterUnavailableReason, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../support/cluster';
import { waitForCrdEstablished } from '../support/crd-established';
import { BOOT_MARKER } from '../support/guest';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';
import { run, tail } from './background-kubectl';
import { consoleAnswers, getJson, type KubeVirtCR, kubectl } from './operator-cluster';

const why = clusterUnavailableReason();
const enabled = integration('two-node cluster', why === undefined, why ?? '');
const log = (l: string) => process.stderr.write(`[upgrade] ${l}\n`);
const KV_NS = 'kubevirt';
const NEXT_TAG = 'upgrade-test-next';
const VMS = ['vm-up-1', 'vm-up-2'];
/** The VM that cannot migrate: the updater evicts it. */
const EVICTED = 'vm-up-evict';
const LAUNCHER = (tag: string) => `localhost/kubevirt-ts/virt-launcher:${tag}`;

interface PodList {
  items: Array<{ metadata: { name: string; labels?: Record<string, string> }; spec: { nodeName?: string } }>;
}

describe.skipIf(!enabled)('operator upgrade with workloadUpdateStrategy LiveMigrate', () => {
  it('moves both running VMs to launchers of the new image by live migration, each guest booted once', async () => {
    const stateDir = testStateDir();
    const info = await up({ stateDir, bridge: TEST_BRIDGE, podSubnet: TEST_POD_SUBNET, nodes: 2, log });
    const dir = mkdtempSync(join(tmpdir(), 'kvts-upgrade-'));
    const k = (...args: string[]) => kubectl(info, ...args);
    const vmi = (name: string) => getJson<VirtualMachineInstance>(info, 'vmi', name, '-n', 'default');
    const kv = () =>
      getJson<KubeVirtCR & { status?: { outdatedVirtualMachineInstanceWorkloads?: number } }>(
        info,
        'kv',
        'kubevirt',
        '-n',
        KV_NS,
      );
    /** The VMI's launcher pod on the node it runs on. */
    const launcherOf = (v: VirtualMachineInstance) =>
      getJson<PodList>(
        info,
        'pods',
        '-n',
        'default',
        '-l',
        `kubevirt.io/created-by=${v.metadata?.uid}`,
      ).items.find((p) => p.spec.nodeName === v.status?.nodeName);
    /** Boot markers on the VMI's current launcher's serial log. */
    const markers = (v: VirtualMachineInstance) => {
      const pod = launcherOf(v);
      if (!pod) return -1;
      const log = `/var/run/kubevirt-private/${v.metadata?.uid}/virt-serial0-log`;
      const cmd = `busybox grep -c ${BOOT_MARKER} ${log} || true`;
      return Number(
        k('exec', '-n', 'default', pod.metadata.name, '-c', 'compute', '--', 'busybox', 'sh', '-c', cmd),
      );
    };
    try {
      // The operator in the default rendering (components on the pod network), images imported, not pulled.
      const opts = defaultInstallOptions({
        imagePullPolicy: 'Never',
        kubeletRootDir: join(stateDir, 'kubelet'),
      });
      writeFileSync(join(dir, 'operator.yaml'), manifestFiles(opts).get('kubevirt-ts-operator.yaml') ?? '');
      writeFileSync(
        join(dir, 'kubevirt.yaml'),
        stringify({
          apiVersion: 'kubevirt.io/v1',
          kind: 'KubeVirt',
          metadata: { name: 'kubevirt', namespace: KV_NS },
          spec: {
            imagePullPolicy: 'Never',
            workloadUpdateStrategy: { workloadUpdateMethods: ['LiveMigrate', 'Evict'] },
            // TCG guests: KVM is unusable for a guest on these machines (docs/cluster.md).
            configuration: { developerConfiguration: { useEmulation: true } },
          },
        }),
      );
      k('apply', '-f', join(dir, 'operator.yaml'));
      await waitForCrdEstablished(k, 'kubevirts.kubevirt.io');
      k('apply', '-f', join(dir, 'kubevirt.yaml'));
      k('wait', '-n', KV_NS, 'kv', 'kubevirt', '--for', 'condition=Available', '--timeout=400s');

      const example = readFileSync(join(repoRoot, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8').replace(
        'terminationGracePeriodSeconds: 30',
        'terminationGracePeriodSeconds: 0\n      evictionStrategy: LiveMigrate',
      );
      for (const name of VMS)
        writeFileSync(join(dir, `${name}.yaml`), example.replaceAll('vm-tiny-cd', name));
      // Bridge binding on the pod network: not live-migratable (upstream's InterfaceNotLiveMigratable).
      writeFileSync(
        join(dir, `${EVICTED}.yaml`),
        example
          .replaceAll('vm-tiny-cd', EVICTED)
          .replace('evictionStrategy: LiveMigrate', 'evictionStrategy: None')
          .replace(/masquerade: \{\}\n\s+ports:\n\s+- name: echo\n\s+port: 8080/, 'bridge: {}'),
      );
      expect(readFileSync(join(dir, `${EVICTED}.yaml`), 'utf8')).toContain('bridge: {}');
      k(
        'apply',
        '-f',
        join(dir, `${VMS[0]}.yaml`),
        '-f',
        join(dir, `${VMS[1]}.yaml`),
        '-f',
        join(dir, `${EVICTED}.yaml`),
      );
      const before = new Map<string, VirtualMachineInstance>();
      for (const name of VMS) {
        const v = await waitFor(
          `${name} Running, live-migratable, booted once`,
          () => {
            const x = vmi(name);
            const migratable = x.status?.conditions?.find((c) => c.type === 'LiveMigratable')?.status;
            return x.status?.phase === 'Running' && migratable === 'True' && markers(x) === 1 ? x : undefined;
          },
          300_000,
          2_000,
        );
        expect(v.status?.launcherContainerImageVersion).toBe(LAUNCHER('latest'));
        before.set(name, v);
      }
      const evictedBefore = await waitFor(
        `${EVICTED} Running, not live-migratable, booted once`,
        () => {
          const x = vmi(EVICTED);
          const migratable = x.status?.conditions?.find((c) => c.type === 'LiveMigratable');
          return x.status?.phase === 'Running' && migratable?.status === 'False' && markers(x) === 1
            ? x
            : undefined;
        },
        300_000,
        2_000,
      );
      expect(evictedBefore.status?.conditions?.find((c) => c.type === 'LiveMigratable')?.reason).toBe(
        'InterfaceNotLiveMigratable',
      );
      log(`before: ${VMS.map((n) => `${n} on ${before.get(n)?.status?.nodeName}`).join(', ')}`);
      expect(kv().status?.outdatedVirtualMachineInstanceWorkloads).toBe(0);

      // The same images under a second tag, in both nodes' containerd.
      for (const paths of [
        clusterPaths(stateDir),
        ...(info.extraNodes ?? []).map((n) => clusterPaths(n.dir)),
      ])
        for (const name of ['kubevirt-ts', 'virt-launcher'])
          ctr(paths, [
            'images',
            'tag',
            '--force',
            `localhost/kubevirt-ts/${name}:latest`,
            `localhost/kubevirt-ts/${name}:${NEXT_TAG}`,
          ]);
      // Every value the CR's count takes: the evicted VMI leaves the count within a second
      // of the first pass, quicker than a poll may look.
      const countWatch = run([
        '--kubeconfig',
        info.kubeconfigPath,
        'get',
        'kv',
        'kubevirt',
        '-n',
        KV_NS,
        '--watch',
        '-o',
        'jsonpath={.status.outdatedVirtualMachineInstanceWorkloads}{"\\n"}',
      ]);
      const counted = () => Math.max(0, ...countWatch.out().split('\n').map(Number).filter(Number.isFinite));
      const t0 = performance.now();
      k(
        'patch',
        'kv',
        'kubevirt',
        '-n',
        KV_NS,
        '--type',
        'merge',
        '-p',
        JSON.stringify({ spec: { imageTag: NEXT_TAG } }),
      );
      // The new virt-controller counts all three outdated before it moves any.
      await waitFor(
        'the KubeVirt CR Deployed at the new tag',
        () => {
          const cr = kv();
          return cr.status?.observedKubeVirtVersion === NEXT_TAG && cr.status.phase === 'Deployed';
        },
        400_000,
        1_000,
      );
      log(`upgrade to Deployed: ${Math.round(performance.now() - t0)} ms`);
      const after = await waitFor(
        'both VMIs on launchers of the new image',
        () => {
          const vs = VMS.map(vmi);
          return vs.every(
            (v) =>
              v.status?.launcherContainerImageVersion === LAUNCHER(NEXT_TAG) && v.status.phase === 'Running',
          )
            ? vs
            : undefined;
        },
        400_000,
        2_000,
      );
      log(
        `both moved ${Math.round(performance.now() - t0)} ms after the tag change; most outdated counted: ${counted()}`,
      );
      countWatch.kill();
      expect(counted(), tail(countWatch.out())).toBe(3);
      // The one that cannot migrate: evicted, and its VM runs a new VMI on the new image.
      const evicted = await waitFor(
        `${EVICTED}: a new VMI on a launcher of the new image`,
        () => {
          const x = vmi(EVICTED);
          return x.metadata?.uid !== evictedBefore.metadata?.uid &&
            x.status?.phase === 'Running' &&
            x.status.launcherContainerImageVersion === LAUNCHER(NEXT_TAG)
            ? x
            : undefined;
        },
        400_000,
        2_000,
      );
      log(
        `${EVICTED} evicted and running again ${Math.round(performance.now() - t0)} ms after the tag change`,
      );
      const events = k(
        'get',
        'events',
        '-n',
        'default',
        '--field-selector',
        `involvedObject.uid=${evictedBefore.metadata?.uid}`,
        '-o',
        'jsonpath={range .items[*]}{.reason}{"\\n"}{end}',
      );
      expect(events.split('\n')).toContain('SuccessfulEvict');
      await waitFor(
        `${EVICTED} booted once on its new launcher`,
        () => (markers(evicted) === 1 ? true : undefined),
        180_000,
        2_000,
      );
      expect(await consoleAnswers(info, EVICTED, { expr: '6*8', tag: 'E' })).toBe(48);
      await waitFor(
        'the outdated count 0',
        () => (kv().status?.outdatedVirtualMachineInstanceWorkloads === 0 ? true : undefined),
        60_000,
        1_000,
      );

      const migrations = getJson<{ items: VirtualMachineInstanceMigration[] }>(
        info,
        'vmim',
        '-n',
        'default',
      ).items;
      expect(migrations.map((m) => [m.spec?.vmiName, m.spec?.priority, m.status?.phase]).sort()).toEqual(
        VMS.map((n) => [n, 'system-critical', 'Succeeded']),
      );
      for (const m of migrations) {
        expect(m.metadata?.name).toMatch(/^kubevirt-workload-update-/);
        expect(m.metadata?.annotations).toHaveProperty(['kubevirt.io/workloadUpdateMigration'], '');
      }
      for (const v of after) {
        const name = v.metadata?.name ?? '';
        const old = before.get(name);
        // The same VMI, on another node's launcher of the new image, not booted again.
        expect(v.metadata?.uid).toBe(old?.metadata?.uid);
        expect(v.status?.nodeName).not.toBe(old?.status?.nodeName);
        expect(v.metadata?.labels?.['kubevirt.io/outdatedLauncherImage']).toBeUndefined();
        expect(markers(v)).toBe(0);
        expect(await consoleAnswers(info, name, { expr: '6*7', tag: 'U' })).toBe(42);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
      expect(left).toEqual([]);
    }
    expect(leftovers(stateDir, TEST_BRIDGE)).toEqual([]);
  }, 1_500_000);
});
