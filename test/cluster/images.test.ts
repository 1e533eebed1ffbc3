/**
 * The one-node cluster runs the project's images as real containers: the virt-launcher
 * image's libvirt and QEMU (TCG loads), and a containerDisk image's /disk read by an init
 * container the way upstream's launcher pods do (a binary from the launcher image, copied
 * into a shared emptyDir, runs inside the containerDisk container).
 */
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { clusterUnavailableReason, sharedCluster, TEST_POD_SUBNET } from '../support/cluster';
import { createTestNamespace } from '../support/cluster-namespace';
import { cacheDir, integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('one-node cluster', why === undefined, why ?? '');
const NS = 'cluster-images';

describe.skipIf(!enabled)('the one-node cluster runs the project images', () => {
  let info: ClusterInfo;
  let core: CoreV1Api;

  beforeAll(async () => {
    info = await sharedCluster();
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    await createTestNamespace(core, NS);
  }, 300_000);

  afterAll(async () => {
    await core?.deleteNamespace({ name: NS }).catch(() => undefined);
  });

  /** Creates the pod and waits until it has Succeeded (or fails with its status). */
  async function runToCompletion(pod: V1Pod): Promise<V1Pod> {
    await core.createNamespacedPod({ namespace: NS, body: pod });
    const name = pod.metadata?.name ?? '';
    return waitFor(
      `pod ${name} Succeeded`,
      async () => {
        const p = await core.readNamespacedPod({ name, namespace: NS });
        if (p.status?.phase === 'Failed') throw new Error(`pod ${name} failed: ${JSON.stringify(p.status)}`);
        return p.status?.phase === 'Succeeded' ? p : undefined;
      },
      120_000,
      250,
    );
  }

  const logs = (name: string, container: string) =>
    core.readNamespacedPodLog({ name, namespace: NS, container });

  it('runs libvirtd, QEMU (with TCG) and Node from the virt-launcher image', async () => {
    const pod = await runToCompletion({
      metadata: { name: 'launcher-versions' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'versions',
            image: info.images['virt-launcher'],
            imagePullPolicy: 'Never',
            command: ['/bin/sh', '-c'],
            args: [
              'libvirtd --version; virtlogd --version; qemu-system-x86_64 --version | head -1; node --version; ' +
                'cat /etc/debian_version; id qemu; ' +
                // QEMU's TCG accelerator is a module in Debian: a missing module fails here.
                'echo quit | qemu-system-x86_64 -machine none -accel tcg -display none -nodefaults -monitor stdio | head -1',
            ],
          },
        ],
      },
    });
    const out = await logs('launcher-versions', 'versions');
    const lines = out.trim().split('\n');
    expect(lines[0]).toMatch(/^libvirtd \(libvirt\) 9\.0\.0$/);
    expect(lines[1]).toMatch(/^virtlogd \(libvirt\) 9\.0\.0$/);
    expect(lines[2]).toMatch(/^QEMU emulator version 7\.2\.\d+ \(Debian 1:7\.2\+dfsg-[^)]+\)$/);
    expect(lines[3]).toBe(process.version);
    expect(lines[4]).toMatch(/^12\.\d+$/);
    expect(lines[5]).toBe('uid=107(qemu) gid=107(qemu) groups=107(qemu)');
    expect(lines[6]).toMatch(/^QEMU 7\.2\.\d+ monitor - type 'help' for more information$/);
    // A real container on the bridge: its IP is in the pod subnet.
    expect(pod.status?.podIP).toMatch(
      new RegExp(`^${TEST_POD_SUBNET.replace(/\.0\/24$/, '').replace(/\./g, '\\.')}\\.\\d+$`),
    );
  });

  it('runs the components image: kubevirt-ts with its production dependencies', async () => {
    await runToCompletion({
      metadata: { name: 'components-help' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          { name: 'help', image: info.images['kubevirt-ts'], imagePullPolicy: 'Never', args: ['--help'] },
        ],
      },
    });
    const out = await logs('components-help', 'help');
    expect(out).toMatch(/^Usage: kubevirt-ts \[options\] \[command\]$/m);
    expect(out).toMatch(/^ {2}virt-handler \[options\] +run the node agent/m);
  });

  it("mounts a containerDisk image's /disk and reads the qcow2 there", async () => {
    const hostDisk = join(cacheDir, 'guest', 'current', 'boot.qcow2');
    const hostInfo = JSON.parse(
      execFileSync('qemu-img', ['info', '--output=json', hostDisk], { encoding: 'utf8' }),
    ) as {
      'virtual-size': number;
    };
    const volumeMounts = [
      { name: 'tools', mountPath: '/tools' },
      { name: 'shared', mountPath: '/shared' },
    ];
    await runToCompletion({
      metadata: { name: 'containerdisk' },
      spec: {
        restartPolicy: 'Never',
        volumes: [
          { name: 'tools', emptyDir: {} },
          { name: 'shared', emptyDir: {} },
        ],
        initContainers: [
          {
            name: 'tools',
            image: info.images['virt-launcher'],
            imagePullPolicy: 'Never',
            command: ['cp', '/bin/busybox', '/tools/busybox'],
            volumeMounts,
          },
          {
            // The containerDisk image has no userland: the launcher image's busybox runs in it.
            name: 'disk',
            image: info.images['tiny-guest-containerdisk'],
            imagePullPolicy: 'Never',
            command: ['/tools/busybox', 'sh', '-c', 'ls -ln /disk; cp /disk/disk.qcow2 /shared/disk.qcow2'],
            volumeMounts,
          },
        ],
        containers: [
          {
            name: 'inspect',
            image: info.images['virt-launcher'],
            imagePullPolicy: 'Never',
            command: ['qemu-img', 'info', '--output=json', '/shared/disk.qcow2'],
            volumeMounts,
          },
        ],
      },
    });
    const listing = (await logs('containerdisk', 'disk')).trim().split('\n');
    expect(listing[0]).toMatch(/^total \d+$/);
    // Upstream's layout: one qcow2 under /disk/, owned by qemu (107:107).
    expect(listing.slice(1)).toHaveLength(1);
    expect(listing[1]).toMatch(
      new RegExp(`^-rw-r--r-- +1 107 +107 +${statSync(hostDisk).size} .* disk\\.qcow2$`),
    );
    const inImage = JSON.parse(await logs('containerdisk', 'inspect')) as {
      format: string;
      'virtual-size': number;
    };
    expect(inImage.format).toBe('qcow2');
    expect(inImage['virtual-size']).toBe(hostInfo['virtual-size']);
  });
});
