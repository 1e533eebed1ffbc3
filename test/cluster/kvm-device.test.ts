/**
 * /dev/kvm for a non-root launcher on the real kubelet (upstream's claimDeviceOwnership):
 * a pod running as the qemu user (107) that a device plugin gives /dev/kvm gets the node as
 * its own from the project's containerd (device_ownership_from_security_context); under a
 * runtime without that setting it would keep the host's owner and mode (root:kvm 0660, set
 * back by the test) and could not open it; the node agent's step
 * for launcher pods (find the container's process through the host's /proc, make the
 * container's own node 107's) lets it, and the host's /dev/kvm is untouched. The device
 * plugin here is the handler's DevicePlugin class served by this test under a resource
 * name of its own, so the test needs no component installed. (The VM test boots with TCG
 * and requests no KVM: KVM guests are unusably slow on these machines.)
 */
import { chownSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { Pod } from '../../src/controllers/common/pod';
import { DevicePlugin } from '../../src/controllers/virt-handler/device-plugin/device-plugin';
import { claimDeviceOwnership } from '../../src/controllers/virt-handler/isolation/device-ownership';
import { detectLauncherIsolation } from '../../src/controllers/virt-handler/isolation/launcher-process';
import { clusterUnavailableReason, sharedCluster } from '../support/cluster';
import { kubectlWith, runPod } from '../support/cluster-pods';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason() ?? (existsSync('/dev/kvm') ? undefined : 'no /dev/kvm on this host');
const enabled = integration('one-node cluster with /dev/kvm', why === undefined, why ?? '');
const NS = 'cluster-kvm-device';
const RESOURCE = 'test.kubevirt.io/kvm-owner';

describe.skipIf(!enabled)('an allocated /dev/kvm for a non-root container', () => {
  let info: ClusterInfo;
  let core: CoreV1Api;
  let plugin: DevicePlugin;

  beforeAll(async () => {
    info = await sharedCluster();
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    plugin = new DevicePlugin({ device: { resourceName: RESOURCE, devicePath: '/dev/kvm', count: 10 } });
    await plugin.start();
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await waitFor(
      `${RESOURCE} on the Node and the default service account`,
      async () => {
        const n = await core.readNode({ name: info.nodeName });
        await core.readNamespacedServiceAccount({ name: 'default', namespace: NS });
        return n.status?.allocatable?.[RESOURCE] === '10';
      },
      60_000,
      500,
    );
  }, 300_000);

  afterAll(async () => {
    if (!info) return;
    await core.deleteNamespace({ name: NS }).catch(() => undefined);
    await plugin?.stop();
  });

  it("makes the container's own /dev/kvm the qemu user's, not the host's", async () => {
    const pod = await runPod(core, {
      namespace: NS,
      name: 'kvm-user',
      image: info.images['virt-launcher'] ?? '',
      command: ['busybox', 'sleep', '3600'],
      runAsUser: 107,
      limits: { [RESOURCE]: '1' },
    });
    const kubectl = kubectlWith(info.kubeconfigPath);
    const open = () =>
      kubectl(
        'exec',
        '-n',
        NS,
        'kvm-user',
        '--',
        'busybox',
        'sh',
        '-c',
        'id -u; busybox stat -c "%u:%g %a" /dev/kvm; (exec 3<>/dev/kvm) 2>/dev/null && echo opened || echo denied',
      )
        .trim()
        .split('\n');
    const host = statSync('/dev/kvm');
    const mode = (host.mode & 0o777).toString(8);
    const [uid, given, openedAtStart] = open();
    expect(uid).toBe('107');
    // The project's containerd hands devices to the container's user
    // (device_ownership_from_security_context, scripts/cluster/containerd.ts), as KubeVirt
    // asks of a runtime for non-root VMs.
    expect(given).toBe(`107:107 ${mode}`);
    expect(openedAtStart).toBe('opened');
    // The pod's one container stands for a launcher's compute container.
    const asLauncher = {
      ...(pod as Pod),
      status: {
        containerStatuses: (pod.status?.containerStatuses ?? []).map((c) => ({ ...c, name: 'compute' })),
      },
    } as Pod;
    const iso = await detectLauncherIsolation(asLauncher);
    expect(readCmd(iso.pid)).toEqual(['busybox', 'sleep', '3600']);
    // A runtime without that setting leaves the host's owner on the container's node: put it
    // back so, and the node agent's step must make it usable again.
    chownSync(join(iso.root, 'dev', 'kvm'), 0, host.gid);
    const [, before, refused] = open();
    expect(before).toBe(`0:${host.gid} ${mode}`);
    expect(refused).toBe('denied');
    expect(await claimDeviceOwnership(iso.root, 'kvm')).toBe(true);
    const [, after, opened] = open();
    expect(after).toBe(`107:107 ${mode}`);
    expect(opened).toBe('opened');
    const again = statSync('/dev/kvm');
    expect([again.uid, again.gid, again.mode]).toEqual([host.uid, host.gid, host.mode]);
    // A container without the device has nothing to claim.
    expect(await claimDeviceOwnership(iso.root, 'vhost-vsock')).toBe(false);
    process.stdout.write(`kvm-user (uid 107): /dev/kvm ${before} ${refused}; claimed: ${after} ${opened}\n`);
  }, 300_000);
});

function readCmd(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}
