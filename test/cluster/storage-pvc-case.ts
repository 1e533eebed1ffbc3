/**
 * The storage stack as the operator installs it (operator.serial.test.ts runs these after
 * the install): the CSI node DaemonSet (driver registered with the kubelet, csi-provisioner
 * and csi-snapshotter beside it) and snapshot-controller ready, the CSIDriver, the default
 * virt StorageClass and VolumeSnapshotClass there; then a VM booting the tiny guest from
 * its containerDisk with two claims of `kubevirt-ts-local` as extra disks, a blank
 * filesystem claim (its disk.img made by the launcher) and a block claim (a device in the
 * launcher pod): the guest writes a line to each disk, and after `virtctl stop` and
 * `virtctl start` (a new launcher pod) reads both back.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import { repoRoot } from '../../scripts/gen-api';
import { PtySession } from '../cli/pty-bridge';
import { qemuCmdline } from '../support/processes';
import { waitFor } from '../support/wait';
import { getJson, isReady, kubectl, kubectlResult, podsByComponent } from './operator-cluster';
import { KV_NS, type OperatorCases } from './operator-lifecycle-cases';

const VM = 'vm-pvc-disks';
const NS = 'default';

/** What to look at when the storage stack or the VM does not come up: its pods' state and logs. */
function diagnosis(info: OperatorCases['info']): string {
  const run = (args: string[]) => {
    const r = kubectlResult(info, args);
    return r.code === 0 ? kubectl(info, ...args) : r.err;
  };
  return [
    run(['get', 'pods', '-A', '-o', 'wide']),
    run(['get', 'pvc,pv', '-A']),
    ...['csi-driver', 'csi-provisioner', 'csi-snapshotter'].map(
      (c) => `--- ${c}:\n${run(['-n', KV_NS, 'logs', 'ds/kubevirt-ts-csi-node', '-c', c, '--tail=15'])}`,
    ),
    run(['get', 'events', '-n', NS, '--sort-by=.lastTimestamp']).split('\n').slice(-15).join('\n'),
    run(['get', 'vmi', '-n', NS, '-o', 'yaml']).split('\n').slice(-60).join('\n'),
    `--- launcher:\n${run(['logs', '-n', NS, '-l', `vm.kubevirt.io/name=${VM}`, '-c', 'compute', '--tail=80'])}`,
    `--- in the launcher:\n${launcherShell(info, 'id; ls -ln /dev/blkdisk /var/run/kubevirt-private/vmi-disks/fsdisk; tail -n 20 $(find / -xdev -name "*.log" -path "*qemu*" 2>/dev/null) 2>&1')}`,
  ].join('\n');
}

/** waitFor, with the diagnosis in the failure. */
const waitShowing = <T>(
  info: OperatorCases['info'],
  what: string,
  f: () => T | undefined | false,
  ms: number,
) =>
  waitFor(what, f, ms, 1_000).catch((e) => {
    throw new Error(`${(e as Error).message}\n${diagnosis(info)}`);
  });

/** The storage stack's pods Ready, the driver on the node's CSINode, the classes there. */
export async function storageStackReady({ info, log }: OperatorCases) {
  const ready = (c: string) => (podsByComponent(info, KV_NS).get(c) ?? []).filter(isReady);
  await waitFor(
    'the CSI node pod and snapshot-controller Ready',
    () => ready('kubevirt-ts-csi-node').length === 1 && ready('snapshot-controller').length === 1,
    180_000,
    1_000,
  );
  const node = ready('kubevirt-ts-csi-node')[0];
  expect(node.spec.containers.map((c) => c.name)).toEqual([
    'csi-driver',
    'csi-provisioner',
    'csi-snapshotter',
  ]);
  const csiNode = await waitShowing(
    info,
    'csi.kubevirt-ts.io in the CSINode',
    () => {
      const n = getJson<{
        spec: { drivers?: Array<{ name: string; nodeID: string; topologyKeys?: string[] }> };
      }>(info, 'csinode', info.nodeName);
      return n.spec.drivers?.find((d) => d.name === 'csi.kubevirt-ts.io');
    },
    60_000,
  );
  expect(csiNode).toEqual({
    name: 'csi.kubevirt-ts.io',
    nodeID: info.nodeName,
    topologyKeys: ['topology.kubevirt-ts.io/node'],
  });
  const sc = getJson<{ metadata: { annotations?: Record<string, string> }; provisioner: string }>(
    info,
    'storageclass',
    'kubevirt-ts-local',
  );
  expect(sc.provisioner).toBe('csi.kubevirt-ts.io');
  expect(sc.metadata.annotations?.['storageclass.kubevirt.io/is-default-virt-class']).toBe('true');
  expect(getJson<{ driver: string }>(info, 'volumesnapshotclass', 'kubevirt-ts-local').driver).toBe(
    'csi.kubevirt-ts.io',
  );
  log('storage stack ready: CSI node pod, snapshot-controller, CSIDriver, classes');
}

const claim = (name: string, size: string, volumeMode: 'Filesystem' | 'Block') => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: NS },
  spec: {
    storageClassName: 'kubevirt-ts-local',
    accessModes: ['ReadWriteOnce'],
    volumeMode,
    resources: { requests: { storage: size } },
  },
});

const vm = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: VM, namespace: NS },
  spec: {
    runStrategy: 'Always',
    template: {
      spec: {
        terminationGracePeriodSeconds: 5,
        domain: {
          devices: {
            autoattachGraphicsDevice: false,
            autoattachPodInterface: false,
            disks: [
              { name: 'boot', disk: { bus: 'virtio' } },
              { name: 'fsdisk', disk: { bus: 'virtio' } },
              { name: 'blkdisk', disk: { bus: 'virtio' } },
            ],
          },
          resources: { requests: { memory: '128Mi' } },
        },
        volumes: [
          {
            name: 'boot',
            containerDisk: {
              image: 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest',
              imagePullPolicy: 'Never',
            },
          },
          { name: 'fsdisk', persistentVolumeClaim: { claimName: 'pvc-fs' } },
          { name: 'blkdisk', persistentVolumeClaim: { claimName: 'pvc-block' } },
        ],
      },
    },
  },
};

/**
 * Runs `line` in the guest's shell over `virtctl console` and returns what the console
 * printed after it, once `until` matched there. The guest may be booting still or have
 * booted before the console attached (its boot marker already gone by): the line (safe to
 * run twice) is typed again every 10 s until the answer shows.
 */
async function inGuest(info: OperatorCases['info'], line: string, until: RegExp): Promise<string> {
  const pty = new PtySession([
    process.execPath,
    join(repoRoot, 'dist', 'cli', 'virtctl.js'),
    'console',
    VM,
    '-n',
    NS,
    '--kubeconfig',
    info.kubeconfigPath,
  ]);
  try {
    await pty.waitFor('The escape sequence is ^]', 60_000);
    // The shell's prompt first: what is typed while it starts loses its first characters.
    const deadline = Date.now() + 300_000;
    const within = (re: RegExp, from: number, ms: number) =>
      waitFor(`${re} from the guest`, () => re.test(pty.output.slice(from)), ms, 100)
        .then(() => true)
        .catch(() => false);
    let answer: string | undefined;
    while (answer === undefined) {
      if (Date.now() > deadline)
        throw new Error(`no ${until} from the guest; its console said:\n${pty.output.slice(-2000)}`);
      const mark = pty.output.length;
      pty.type('\r');
      if (!(await within(/guest# /, mark, 10_000))) continue;
      const from = pty.output.length;
      pty.type(`${line}\r`);
      if (await within(until, from, 30_000)) answer = pty.output.slice(from);
    }
    pty.type('\x1d');
    expect(await pty.exited).toBe(0);
    return answer;
  } finally {
    pty.kill();
  }
}

const vmiPhase = (info: OperatorCases['info']) =>
  kubectlResult(info, ['get', 'vmi', VM, '-n', NS]).code === 0
    ? getJson<{ status?: { phase?: string } }>(info, 'vmi', VM, '-n', NS).status?.phase
    : undefined;

interface LauncherPod {
  metadata: { uid: string };
  spec: {
    containers: Array<{
      name: string;
      volumeDevices?: Array<{ name: string; devicePath: string }>;
      volumeMounts?: Array<{ name: string; mountPath: string }>;
    }>;
  };
}
const launcherPod = (info: OperatorCases['info']) =>
  getJson<{ items: LauncherPod[] }>(info, 'pods', '-n', NS, '-l', `vm.kubevirt.io/name=${VM}`).items.find(
    (p) => p.spec.containers.some((c) => c.name === 'compute'),
  );

/**
 * Two claims of kubevirt-ts-local as disks of a VM: bound when its launcher pod is
 * scheduled, written by the guest, read back by the guest after a stop and start.
 */
export async function vmWithClaimDisks(c: OperatorCases) {
  try {
    await vmWithClaimDisksSteps(c);
  } finally {
    // After a failure too: a launcher pod left on a CSI volume holds up the cluster's `down`.
    kubectlResult(c.info, [
      'delete',
      'vm',
      VM,
      '-n',
      NS,
      '--ignore-not-found',
      '--wait=true',
      '--timeout=120s',
    ]);
    kubectlResult(c.info, [
      'delete',
      'pvc',
      'pvc-fs',
      'pvc-block',
      '-n',
      NS,
      '--ignore-not-found',
      '--wait=true',
      '--timeout=120s',
    ]);
  }
}

async function vmWithClaimDisksSteps({ info, log }: OperatorCases) {
  const k = (...args: string[]) => kubectl(info, ...args);
  const apply = (o: unknown) => kubectlApply(info, o);
  apply(claim('pvc-fs', '128Mi', 'Filesystem'));
  apply(claim('pvc-block', '32Mi', 'Block'));
  // WaitForFirstConsumer: nothing is provisioned before a pod needs it.
  expect(getJson<{ status: { phase: string } }>(info, 'pvc', 'pvc-fs', '-n', NS).status.phase).toBe(
    'Pending',
  );
  const t0 = performance.now();
  apply(vm);
  await waitShowing(info, 'the VMI Running', () => vmiPhase(info) === 'Running', 300_000);
  log(`VM with claim disks Running ${Math.round(performance.now() - t0)} ms after its creation`);
  for (const c of ['pvc-fs', 'pvc-block']) {
    const pvc = getJson<{ status: { phase: string }; spec: { volumeName: string } }>(
      info,
      'pvc',
      c,
      '-n',
      NS,
    );
    expect(pvc.status.phase, c).toBe('Bound');
    const pv = getJson<{ spec: { csi: { driver: string } } }>(info, 'pv', pvc.spec.volumeName);
    expect(pv.spec.csi.driver).toBe('csi.kubevirt-ts.io');
  }
  // The block claim is a device of the launcher, the filesystem claim a mount (upstream's paths).
  const pod = launcherPod(info)!;
  const compute = pod.spec.containers.find((c) => c.name === 'compute')!;
  expect(compute.volumeDevices).toEqual([{ name: 'blkdisk', devicePath: '/dev/blkdisk' }]);
  expect(compute.volumeMounts).toContainEqual({
    name: 'fsdisk',
    mountPath: '/var/run/kubevirt-private/vmi-disks/fsdisk',
  });
  // The VMI's status records the claims as upstream's VMI controller does.
  const vs = getJson<{
    status: {
      volumeStatus: Array<{
        name: string;
        persistentVolumeClaimInfo?: { volumeMode?: string; claimName?: string };
      }>;
    };
  }>(info, 'vmi', VM, '-n', NS).status.volumeStatus;
  expect(vs.find((s) => s.name === 'blkdisk')?.persistentVolumeClaimInfo).toMatchObject({
    claimName: 'pvc-block',
    volumeMode: 'Block',
  });
  expect(vs.find((s) => s.name === 'fsdisk')?.persistentVolumeClaimInfo).toMatchObject({
    claimName: 'pvc-fs',
    volumeMode: 'Filesystem',
  });
  // QEMU opens the file claim's disk.img as a file and the block claim's device as a host device.
  const cmdline = await waitShowing(info, "the guest's QEMU process", () => qemuCmdline(NS, VM), 60_000);
  expect(cmdline).toContain(
    '"driver":"file","filename":"/var/run/kubevirt-private/vmi-disks/fsdisk/disk.img"',
  );
  expect(cmdline).toContain('"driver":"host_device","filename":"/dev/blkdisk"');
  // disk.img: made by the launcher, sparse, the claim's filesystem's room (128Mi asked, less free).
  const size = Number(
    execInLauncher(info, ['stat', '-c', '%s', '/var/run/kubevirt-private/vmi-disks/fsdisk/disk.img']).trim(),
  );
  expect(size).toBeGreaterThan(0.9 * 128 * 2 ** 20);
  expect(size).toBeLessThanOrEqual(128 * 2 ** 20);

  // vda is the boot disk, vdb the filesystem claim's image, vdc the block claim.
  const wrote = await inGuest(
    info,
    'printf KVTS-FS-DATA-1 | dd of=/dev/vdb conv=fsync 2>/dev/null; printf KVTS-BLK-DATA-2 | dd of=/dev/vdc conv=fsync 2>/dev/null; echo WROTE-$((40+2))',
    /WROTE-42/,
  );
  expect(wrote).toMatch(/WROTE-42/);

  const firstPod = pod.metadata.uid;
  runVirtctl(info, 'stop', VM);
  await waitFor('the VMI gone', () => vmiPhase(info) === undefined, 180_000, 1_000);
  runVirtctl(info, 'start', VM);
  await waitShowing(info, 'the VMI Running again', () => vmiPhase(info) === 'Running', 300_000);
  expect(launcherPod(info)?.metadata.uid).not.toBe(firstPod);
  // (The answer's tag is computed, so the echoed command line never matches it.)
  const read = await inGuest(
    info,
    'echo R1-$(dd if=/dev/vdb bs=14 count=1 2>/dev/null)-R1; echo R2-$(dd if=/dev/vdc bs=15 count=1 2>/dev/null)-R2; echo READ-$((40+2))',
    // The R1 line's output (the echoed command has `$(` there; the console ends lines with CR CR LF), then the end tag.
    /R1-[^$\n]*-R1\s[\s\S]*READ-42/,
  );
  expect(read).toMatch(/R1-KVTS-FS-DATA-1-R1/);
  expect(read).toMatch(/R2-KVTS-BLK-DATA-2-R2/);
  log('the guest read back what it wrote to both claims after stop and start (a new launcher pod)');

  // Gone through the API: the VM, then the claims, whose volumes the driver deletes.
  k('delete', 'vm', VM, '-n', NS, '--wait=true', '--timeout=180s');
  const pvs = ['pvc-fs', 'pvc-block'].map(
    (c) => getJson<{ spec: { volumeName: string } }>(info, 'pvc', c, '-n', NS).spec.volumeName,
  );
  k('delete', 'pvc', 'pvc-fs', 'pvc-block', '-n', NS, '--wait=true', '--timeout=120s');
  await waitFor(
    "the claims' volumes deleted",
    () => pvs.every((pv) => kubectlResult(info, ['get', 'pv', pv]).code !== 0),
    120_000,
    1_000,
  );
}

function kubectlApply(info: OperatorCases['info'], o: unknown): void {
  const r = kubectlResult(info, ['apply', '-f', '-'], stringify(o));
  if (r.code !== 0) throw new Error(`kubectl apply: ${r.err}`);
}

/** `virtctl VERB VM` against the cluster; throws with its output on failure. */
function runVirtctl(info: OperatorCases['info'], verb: string, name: string): void {
  execFileSync(
    process.execPath,
    [join(repoRoot, 'dist', 'cli', 'virtctl.js'), verb, name, '-n', NS, '--kubeconfig', info.kubeconfigPath],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

/** A shell line in the launcher's compute container, its output or why it could not run. */
function launcherShell(info: OperatorCases['info'], line: string): string {
  const pods = kubectlResult(info, [
    'get',
    'pods',
    '-n',
    NS,
    '-l',
    `vm.kubevirt.io/name=${VM}`,
    '-o',
    'name',
  ]);
  if (pods.code !== 0) return pods.err;
  try {
    return execInLauncher(info, ['sh', '-c', line]);
  } catch (e) {
    return String((e as Error).message);
  }
}

/** A command in the VM's launcher pod's compute container. */
function execInLauncher(info: OperatorCases['info'], cmd: string[]): string {
  const pod = getJson<{ items: Array<{ metadata: { name: string } }> }>(
    info,
    'pods',
    '-n',
    NS,
    '-l',
    `vm.kubevirt.io/name=${VM}`,
  ).items[0];
  return kubectl(info, 'exec', '-n', NS, pod.metadata.name, '-c', 'compute', '--', ...cmd);
}
