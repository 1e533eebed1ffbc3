/**
 * Upstream KubeVirt's example VMs and VMIs with default networking boot in local mode,
 * their manifests applied unchanged (issue 16's first "done when").
 *
 * Upstream's containerDisk images (cirros, alpine, fedora) cannot be pulled here (no
 * registry), so the local image store holds the tiny guest's bootable disk under each of
 * those image names (what a user does with `kubevirt-ts image import NAME disk.qcow2`),
 * and the kernel-boot example's image holds the tiny guest's kernel and initramfs at the
 * example's paths. Everything else is the upstream manifest as it is: its disks and buses,
 * cloud-init volume, memory, and no interfaces (defaulting adds masquerade on the pod
 * network) or the masquerade interface it names. A Halted VM is started as `virtctl start`
 * starts it.
 *
 * For each VMI: it reaches Running, `status.interfaces[0]` names the example's interface
 * with the pod IP, the launcher pod's namespace holds the guest's tap, and inside the guest
 * (its serial console shell) eth0 holds 10.0.2.2/24 by DHCP with the default route via
 * 10.0.2.1. Where the interface forwards every port (no `ports` declared), 4096 bytes go
 * from another pod through the pod IP to the guest's echo server on 8080 and come back. The
 * examples that cannot run here are listed with the reason, and the test fails when an
 * example appears that is in neither list.
 *
 * The VirtualMachinePool example's three VMs each pass the same checks. The instance type
 * examples: their instance types and preferences (csmall.yaml, cluster-csmall.yaml,
 * clarge.yaml, virtio.yaml) are applied unchanged and stored; the VMs naming them set
 * `domain.memory.guest` in their template, which upstream's VM admitter refuses as a
 * conflict with the instance type, and so does local mode's (asserted). With that one
 * field removed (as upstream's own generator wrote these examples before) they boot and
 * pass the same checks, and the instance type's vCPUs and memory are in the VMI's spec,
 * in the QEMU process (vCPU threads, `-m`) and in the guest.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { loadManifestFile } from '../../src/api/manifest/load';
import type { ApiObject } from '../../src/api/validation/admission';
import { applyObjects, loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { netnsName, PodNetwork } from '../../src/controllers/local/pod-runtime/pod-network';
import {
  EventType,
  PodType,
  VirtualMachineInstanceReplicaSetType,
  VirtualMachineInstanceType,
  VirtualMachinePoolType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { startVm } from '../../src/controllers/virt-api/vm-lifecycle';
import { SerialConsole } from '../support/guest';
import { canTestNetworking, networkGuestDir, scopedSnapshot } from '../support/net-snapshot';
import { inNs } from '../support/netns-process';
import { describeUpstream } from '../support/upstream';
import { cliBuilt, e2eRun, waitFor } from './node-harness';
import { qemuSize } from './qemu-size';
import {
  ALL_BOOTS,
  BOOTS,
  DISK_IMAGES,
  ECHO_PEEK,
  INSTANCETYPE_MANIFESTS,
  INSTANCETYPE_VMS,
  KERNEL_IMAGE,
  NOT_HERE,
  TYPED_BOOTS,
  vmiSpecOf,
} from './upstream-examples-catalog';

const guest = networkGuestDir(undefined, 8);
const run = e2eRun("upstream's examples in local mode", () =>
  !canTestNetworking()
    ? 'needs root and /usr/lib/cni (containernetworking-plugins)'
    : !cliBuilt()
      ? 'npm run build first'
      : !guest
        ? 'no tiny guest of recipe 8 or later: run scripts/guest/build.sh'
        : undefined,
);

type Vmi = VirtualMachineInstance & KubeObject;

describeUpstream("upstream's example VMs boot in local mode with default networking", (upstream) => {
  describe.runIf(run)('each example: Running, tap, DHCP 10.0.2.2, status IP, echo', () => {
    const bridge = `kvtsx${process.pid % 10000}`;
    const subnet = '10.244.84.0/24';
    let state: string;
    let node: LocalNode;
    let images: ImageStore;
    let before: ReturnType<typeof scopedSnapshot>;
    const namespaces: string[] = [];
    // The components' lines, for a timeout's message (a CI log is all there is of a rare failure).
    const componentLog: string[] = [];
    // The client's own pod on the same bridge: the host has no route to the pod network
    // (traffic to a pod IP from the host would leave by its default route).
    let peerNet: PodNetwork;
    const peerUid = `eeee${(process.pid % 10000).toString(16).padStart(4, '0')}-0000-4000-8000-000000000084`;

    beforeAll(async () => {
      before = scopedSnapshot([], bridge);
      state = mkdtempSync(join(tmpdir(), 'kvts-upex-'));
      chmodSync(state, 0o755);
      const paths = statePaths(state);
      node = new LocalNode({
        paths,
        podNetwork: { subnet, bridge },
        log: (c, m) => componentLog.push(`${c}: ${m}`),
      });
      await node.start();
      images = new ImageStore(paths.images);
      for (const image of DISK_IMAGES) images.import(image, join(guest ?? '', 'boot.qcow2'));
      const kernelRoot = join(state, 'kernel-image');
      mkdirSync(join(kernelRoot, 'boot'), { recursive: true });
      copyFileSync(join(guest ?? '', 'vmlinuz'), join(kernelRoot, 'boot', 'vmlinuz-virt'));
      copyFileSync(join(guest ?? '', 'initrd.img'), join(kernelRoot, 'boot', 'initramfs-virt'));
      images.import(KERNEL_IMAGE, kernelRoot);
      peerNet = new PodNetwork({ bridge, subnet, pluginDir: '/usr/lib/cni', dataDir: join(state, 'cni') });
      mkdirSync(join(state, 'peer'));
      await peerNet.setUp(peerUid, join(state, 'peer'));
      namespaces.push(netnsName(peerUid));
    }, 60_000);

    afterAll(async () => {
      for (const t of [
        VirtualMachinePoolType,
        VirtualMachineType,
        VirtualMachineInstanceReplicaSetType,
        VirtualMachineInstanceType,
      ]) {
        const list = await node?.store.list<KubeObject>(t, { namespace: 'default' }).catch(() => undefined);
        for (const o of list?.items ?? [])
          await node.store.delete(t, o.metadata?.name ?? '', { namespace: 'default' }).catch(() => undefined);
      }
      await waitFor(
        'launcher pods to go',
        async () => (await node.store.list(PodType, { namespace: 'default' })).items.length === 0,
        180_000,
      ).catch(() => undefined);
      await waitFor(
        "the launcher pods' namespaces to go",
        () => !namespaces.slice(1).some((ns) => existsSync(`/run/netns/${ns}`)),
        60_000,
      ).catch(() => undefined);
      await peerNet?.tearDown(peerUid, join(state, 'peer')).catch(() => undefined);
      await node?.stop();
      try {
        execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
      } catch {
        // never made
      }
      rmSync(state, { recursive: true, force: true });
      expect(scopedSnapshot(namespaces, bridge)).toEqual(before);
    }, 240_000);

    it('lists every upstream VM/VMI example as booting here or not, with a reason', () => {
      const kinds =
        /^kind: (VirtualMachine|VirtualMachineInstance|VirtualMachineInstanceReplicaSet|VirtualMachinePool)$/m;
      const vmExamples = readdirSync(upstream.examplesDir)
        .filter((f) => f.endsWith('.yaml'))
        .filter((f) => kinds.test(readFileSync(join(upstream.examplesDir, f), 'utf8')));
      const unlisted = vmExamples.filter(
        (f) => !ALL_BOOTS.includes(f) && !(f in NOT_HERE) && !(f in INSTANCETYPE_VMS),
      );
      expect(unlisted).toEqual([]);
      expect(ALL_BOOTS.filter((f) => !vmExamples.includes(f))).toEqual([]);
    });

    // Three at a time: each is a TCG guest on a 2-core host.
    const batches: string[][] = [];
    for (let i = 0; i < BOOTS.length; i += 3) batches.push(BOOTS.slice(i, i + 3));
    for (const batch of batches) {
      it(`boots ${batch.join(', ')}`, { timeout: 900_000 }, async () => {
        const started = await Promise.all(batch.map((file) => applyExample(file)));
        const vmis = started.flat();
        expect(vmis.length).toBeGreaterThanOrEqual(batch.length);
        const results = await Promise.all(vmis.map((v) => checkVmi(v)));
        for (const line of results) process.stdout.write(`${line}\n`);
        await Promise.all(batch.map((file) => deleteExample(file)));
      });
    }

    it("stores upstream's instance types and preferences unchanged; refuses their VMs unchanged as upstream's admitter does", {
      timeout: 120_000,
    }, async () => {
      const files = INSTANCETYPE_MANIFESTS.map((f) => join(upstream.examplesDir, f));
      const applied = await applyObjects(
        node.store,
        await loadAndAdmit(files, images, true, undefined, node.store),
      );
      expect(applied.map((a) => `${a.kind}/${a.namespace ?? ''}/${a.name}`)).toEqual([
        'VirtualMachineInstancetype/default/csmall',
        'VirtualMachineClusterInstancetype//cluster-csmall',
        'VirtualMachineInstancetype/default/clarge',
        'VirtualMachinePreference/default/virtio',
      ]);
      for (const file of Object.keys(INSTANCETYPE_VMS)) {
        const name = file.replace(/\.yaml$/, '');
        await expect(
          loadAndAdmit([join(upstream.examplesDir, file)], images, true, undefined, node.store),
        ).rejects.toThrow(
          `VirtualMachine/${name}: spec.template.spec.domain.memory: VM field spec.template.spec.domain.memory conflicts with selected instance type`,
        );
      }
    });

    // Two at a time: clarge is 4 vCPUs of TCG.
    for (let i = 0; i < TYPED_BOOTS.length; i += 2) {
      const batch = TYPED_BOOTS.slice(i, i + 2);
      it(`boots ${batch.join(', ')} without the conflicting memory.guest, sized by the instance type`, {
        timeout: 900_000,
      }, async () => {
        const started = await Promise.all(batch.map((file) => applyExample(file, { dropMemory: true })));
        const results = await Promise.all(started.flat().map((v) => checkVmi(v, INSTANCETYPE_VMS[v.file])));
        for (const line of results) process.stdout.write(`${line}\n`);
        await Promise.all(batch.map((file) => deleteExample(file)));
      });
    }

    /**
     * Applies one example (unchanged, or with its template's memory removed); returns the
     * names of the VMIs it makes.
     */
    async function applyExample(
      file: string,
      o: { dropMemory?: boolean } = {},
    ): Promise<{ file: string; vmi: string; iface: string; allPorts: boolean }[]> {
      let path = join(upstream.examplesDir, file);
      if (o.dropMemory) {
        const doc = parse(readFileSync(path, 'utf8'));
        delete doc.spec.template.spec.domain.memory;
        path = join(state, file);
        writeFileSync(path, stringify(doc));
      }
      const objects = await loadAndAdmit([path], images, true, undefined, node.store);
      await applyObjects(node.store, objects);
      const out = [];
      for (const o of objects) {
        const name = o.metadata?.name ?? '';
        const spec = vmiSpecOf(o);
        const iface = spec?.domain?.devices?.interfaces?.[0];
        const entry = { file, iface: iface?.name ?? '', allPorts: !iface?.ports?.length };
        if (o.kind === 'VirtualMachine') {
          await startVm(node.store, 'default', name);
          out.push({ ...entry, vmi: name });
        } else if (o.kind === 'VirtualMachineInstance') {
          out.push({ ...entry, vmi: name });
        } else if (o.kind === 'VirtualMachineInstanceReplicaSet') {
          const replicas = (o.spec as { replicas?: number }).replicas ?? 1;
          const made = await waitFor(
            `${file}: the ReplicaSet's ${replicas} VMIs`,
            async () => {
              const list = await node.store.list<Vmi>(VirtualMachineInstanceType, { namespace: 'default' });
              const mine = list.items.filter(
                (v) => v.metadata?.labels?.['kubevirt.io/vmReplicaSet'] === name,
              );
              return mine.length === replicas ? mine : undefined;
            },
            120_000,
          );
          // The ReplicaSet's template has no interfaces: the VMI's defaulting adds the pod one.
          for (const v of made)
            out.push({ ...entry, iface: 'default', allPorts: true, vmi: v.metadata?.name ?? '' });
        } else if (o.kind === 'VirtualMachinePool') {
          const replicas = (o.spec as { replicas?: number }).replicas ?? 1;
          // The pool makes VMs (runStrategy Always), each its VMI with the template's label.
          const made = await waitFor(
            `${file}: the pool's ${replicas} VMIs`,
            async () => {
              const list = await node.store.list<Vmi>(VirtualMachineInstanceType, { namespace: 'default' });
              const mine = list.items.filter((v) => v.metadata?.labels?.['kubevirt.io/vmpool'] === name);
              return mine.length === replicas ? mine : undefined;
            },
            180_000,
          );
          expect(
            made.map((v) => v.metadata?.ownerReferences?.[0]?.kind),
            `${file}: each VMI is its pool VM's`,
          ).toEqual(made.map(() => 'VirtualMachine'));
          for (const v of made)
            out.push({ ...entry, iface: 'default', allPorts: true, vmi: v.metadata?.name ?? '' });
        }
      }
      return out;
    }

    async function deleteExample(file: string): Promise<void> {
      // Not admitted again: the instance type examples are refused unchanged.
      const { objects } = await loadManifestFile(join(upstream.examplesDir, file));
      for (const o of objects) {
        const type =
          o.kind === 'VirtualMachine'
            ? VirtualMachineType
            : o.kind === 'VirtualMachineInstanceReplicaSet'
              ? VirtualMachineInstanceReplicaSetType
              : o.kind === 'VirtualMachinePool'
                ? VirtualMachinePoolType
                : VirtualMachineInstanceType;
        const name = (o.object as ApiObject).metadata?.name ?? '';
        await node.store.delete(type, name, { namespace: 'default' });
      }
    }

    async function checkVmi(
      e: {
        file: string;
        vmi: string;
        iface: string;
        allPorts: boolean;
      },
      sized?: { cpus: number; memory: string },
    ): Promise<string> {
      // The last copy seen: a timeout says where the VMI stood (a CI log is all there is of
      // a run that failed once in many); the launcher's side is read then, not on every poll.
      let last: Vmi | undefined;
      const vmi = await waitFor(
        `${e.file}: VMI ${e.vmi} Running with its interface status`,
        async () => {
          last = await node.store
            .get<Vmi>(VirtualMachineInstanceType, e.vmi, 'default')
            .catch(() => undefined);
          return last?.status?.phase === 'Running' && last.status.interfaces?.[0]?.ipAddress
            ? last
            : undefined;
        },
        400_000,
      ).catch(async (err: Error) => {
        const v = last;
        throw new Error(
          `${err.message}: last seen: phase ${v?.status?.phase ?? '(no VMI)'} (${v?.status?.reason ?? 'no reason'}), ` +
            `node ${v?.status?.nodeName ?? '-'}, ${await launcherSeen(v)}, ` +
            `interfaces ${JSON.stringify(v?.status?.interfaces ?? [])}, conditions ` +
            JSON.stringify(
              (v?.status?.conditions ?? []).map(
                (c) => `${c.type}=${c.status} ${c.reason ?? ''} ${c.message ?? ''}`,
              ),
            ),
        );
      });
      // Any later failure (not only a timeout) says where the launcher stood: a CI log is all
      // there is of a run that failed once in many.
      return checkRunning(e, vmi, sized).catch(async (err: Error) => {
        throw new Error(`${e.file}: ${err.message}; ${await launcherSeen(vmi)}`);
      });
    }

    /** The checks on a Running VMI: its pod's IP, its tap, its DHCP lease, its size, its echo. */
    async function checkRunning(
      e: { file: string; vmi: string; iface: string; allPorts: boolean },
      vmi: Vmi,
      sized?: { cpus: number; memory: string },
    ): Promise<string> {
      const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
      const pod = pods.items.find(
        (p) => p.metadata?.labels?.['kubevirt.io/created-by'] === vmi.metadata?.uid,
      );
      const podIP = pod?.status?.podIP ?? '';
      expect(podIP.startsWith('10.244.84.'), `${e.file}: pod IP ${podIP}`).toBe(true);
      expect(vmi.status?.interfaces?.[0]).toMatchObject({ name: e.iface, ipAddress: podIP });
      const ns = netnsName(pod?.metadata?.uid ?? '');
      namespaces.push(ns);
      const taps = execFileSync('ip', ['-n', ns, '-o', 'link', 'show', 'type', 'tun'], { encoding: 'utf8' });
      expect(taps, `${e.file}: a tap in the launcher pod's namespace`).toMatch(/^\d+: \S+: </);

      const sockets = podEmptyDirPath(statePaths(state).pods, pod?.metadata?.uid ?? '', 'sockets');
      const serial = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 120_000);
      let addr = '';
      let sizing = '';
      try {
        addr = await waitFor(
          `${e.file}: eth0 of ${e.vmi} to hold its DHCP lease`,
          async () => {
            const out = await serial
              .run('ip -4 -o addr show dev eth0; ip route show default', 10_000)
              .catch(() => '');
            return /inet 10\.0\.2\.2\/24/.test(out) && /default via 10\.0\.2\.1/.test(out) ? out : undefined;
          },
          300_000,
        );
        if (sized) sizing = await checkSize(e, vmi, serial, sized);
      } finally {
        serial.close();
      }
      let echoed = 'not tried: the interface declares its ports';
      if (e.allPorts) {
        echoed = inNs(
          netnsName(peerUid),
          process.execPath,
          ['-e', ECHO_PEEK, podIP, '8080', '4096'],
          60_000,
        ).trim();
        expect(echoed, `${e.file}: the guest's echo through ${podIP}:8080`).toBe('echoed 4096');
      }
      const inet = /inet (\S+)/.exec(addr)?.[1];
      return `upstream ${e.file}: VMI ${e.vmi} Running, ${e.iface} ${podIP}, tap ${taps.split(':')[1]?.trim()}, guest eth0 ${inet} via 10.0.2.1, other pod -> ${podIP}:8080 ${echoed}${sizing}`;
    }

    /**
     * What the VMI's launcher pod and the VMI's events said, for a timeout's message: the
     * pod's phase and its container's end (its log tail when it failed), and each Warning.
     */
    async function launcherSeen(v: Vmi | undefined): Promise<string> {
      const uid = v?.metadata?.uid;
      if (!uid) return 'no launcher pod';
      const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
      const pod = pods.items.find((p) => p.metadata?.labels?.['kubevirt.io/created-by'] === uid);
      const ended = pod?.status?.containerStatuses?.map((c) => c.state?.terminated).find((t) => t);
      const events = await node.store.list<
        KubeObject & { reason?: string; message?: string; type?: string; involvedObject?: { uid?: string } }
      >(EventType, { namespace: 'default' });
      const warnings = events.items
        .filter((e) => e.type === 'Warning' && [uid, pod?.metadata?.uid].includes(e.involvedObject?.uid))
        .map((e) => `${e.reason}: ${e.message}`);
      return (
        `launcher pod ${pod ? `${pod.metadata?.name} ${pod.status?.phase}${pod.metadata?.deletionTimestamp ? ' (deleting)' : ''}` : 'gone'}` +
        (ended ? ` ended ${ended.exitCode} ${ended.reason ?? ''}: ${ended.message ?? ''}` : '') +
        `, warnings ${JSON.stringify(warnings)}, component lines ${JSON.stringify(
          componentLog
            .filter(
              (l) => l.includes(v?.metadata?.name ?? '-') || (pod && l.includes(pod.metadata?.name ?? '-')),
            )
            .slice(-40),
        )}`
      );
    }

    /**
     * The instance type's vCPUs and memory in the VMI's spec (expanded by virt-controller),
     * in the QEMU process (the launcher's domain: vCPU threads, `-m`) and as the guest sees them.
     */
    async function checkSize(
      e: { file: string; vmi: string },
      vmi: Vmi,
      serial: SerialConsole,
      sized: { cpus: number; memory: string },
    ): Promise<string> {
      const cpu = vmi.spec.domain.cpu ?? {};
      expect((cpu.sockets ?? 1) * (cpu.cores ?? 1) * (cpu.threads ?? 1), `${e.file}: VMI spec vCPUs`).toBe(
        sized.cpus,
      );
      expect(vmi.spec.domain.memory?.guest, `${e.file}: VMI spec memory.guest`).toBe(sized.memory);
      const mib = sized.memory.endsWith('Gi')
        ? Number.parseInt(sized.memory, 10) * 1024
        : Number.parseInt(sized.memory, 10);
      const qemu = qemuSize(`default_${e.vmi}`);
      expect(qemu, `${e.file}: QEMU of ${e.vmi}`).toEqual({ vcpus: sized.cpus, mib });
      const out = await serial.run('grep -c ^processor /proc/cpuinfo; grep MemTotal /proc/meminfo', 10_000);
      const guestCpus = Number(/^(\d+)\s*$/m.exec(out)?.[1]);
      const memKiB = Number(/MemTotal:\s+(\d+) kB/.exec(out)?.[1]);
      expect(guestCpus, `${e.file}: the guest's CPUs`).toBe(sized.cpus);
      // MemTotal is the guest memory less what the kernel keeps for itself (measured: 77 MiB
      // of 128Mi, 1897 MiB of 2Gi): within half of it, far from the other size.
      expect(memKiB, `${e.file}: the guest's MemTotal`).toBeLessThanOrEqual(mib * 1024);
      expect(memKiB, `${e.file}: the guest's MemTotal`).toBeGreaterThan(mib * 512);
      return `, VMI spec ${sized.cpus} vCPUs ${sized.memory}, QEMU ${qemu?.vcpus} vCPU threads -m ${qemu?.mib}M, guest ${guestCpus} CPUs MemTotal ${memKiB} kB`;
    }
  });
});
