/**
 * accessCredentials on the real one-node cluster: the kubelet mounts the Secret named by a
 * VM's `accessCredentials` (noCloud) into the launcher pod as upstream renders it (volume
 * `<name>-access-cred` at /var/run/kubevirt-private/secret/<name>-access-cred), the
 * launcher reads its key from that mount (kubelet's own secret-volume layout) into the
 * cloud-init NoCloud meta-data, and the tiny guest (recipe 9, booting from its
 * containerDisk) installs exactly that key: its serial console says
 * `authorized_keys=1 source=nocloud`, and the key's comment is in the guest's
 * authorized_keys. (virtctl ssh with the key is exercised in local mode,
 * test/e2e/access-credentials-local.test.ts.)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { repoRoot } from '../../scripts/gen-api';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { CONSOLE_SOCKET } from '../../src/controllers/virt-launcher/domain-report';
import { shortDir } from '../../src/controllers/virt-launcher/short-dir';
import { clusterUnavailableReason, sharedCluster } from '../support/cluster';
import { installComponents } from '../support/cluster-install';
import { kubectlWith } from '../support/cluster-pods';
import { SerialConsole } from '../support/guest';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('one-node cluster', why === undefined, why ?? '');
const NS = 'cluster-access-cred';
const VM = 'vm-tiny-keys';

describe.skipIf(!enabled)('accessCredentials on the real one-node cluster', () => {
  let info: ClusterInfo;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let dir: string;
  let kubectl: (...args: string[]) => string;

  beforeAll(async () => {
    info = await sharedCluster();
    kubectl = kubectlWith(info.kubeconfigPath);
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    dir = mkdtempSync(join(tmpdir(), 'kvts-acred-cluster-'));
    installComponents(info, dir, kubectl);
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await waitFor(
      'default service account',
      () => core.readNamespacedServiceAccount({ name: 'default', namespace: NS }),
      60_000,
      200,
    );
  }, 300_000);

  afterAll(async () => {
    if (!info) return;
    await core.deleteNamespace({ name: NS }).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the Secret mounted by the kubelet reaches the guest through the NoCloud meta-data', {
    timeout: 600_000,
  }, async () => {
    const key = join(dir, 'id_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kvts-cluster-acred', '-f', key]);
    const pub = readFileSync(`${key}.pub`, 'utf8').trim();
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'my-keys' }, stringData: { key1: `${pub}\n` } },
    });
    const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8'));
    vm.metadata.name = VM;
    vm.metadata.namespace = NS;
    vm.spec.template.metadata.labels['kubevirt.io/vm'] = VM;
    vm.spec.template.spec.domain.devices.disks.push({ name: 'cloudinitdisk', disk: { bus: 'virtio' } });
    vm.spec.template.spec.volumes.push({
      name: 'cloudinitdisk',
      cloudInitNoCloud: { userData: '#cloud-config\n' },
    });
    vm.spec.template.spec.accessCredentials = [
      { sshPublicKey: { source: { secret: { secretName: 'my-keys' } }, propagationMethod: { noCloud: {} } } },
    ];
    writeFileSync(join(dir, 'vm.yaml'), stringify(vm));
    kubectl('apply', '-f', join(dir, 'vm.yaml'));
    await waitFor(
      'VMI Running',
      async () => {
        const v = (await custom
          .getNamespacedCustomObject({
            group: 'kubevirt.io',
            version: 'v1',
            namespace: NS,
            plural: 'virtualmachineinstances',
            name: VM,
          })
          .catch(() => undefined)) as VirtualMachineInstance | undefined;
        return v?.status?.phase === 'Running' ? v : undefined;
      },
      300_000,
      1_000,
    );
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' }))
      .items;
    expect(pods).toHaveLength(1);
    const launcher: V1Pod = pods[0];
    expect(launcher.spec?.volumes).toContainEqual(
      expect.objectContaining({
        name: 'my-keys-access-cred',
        secret: expect.objectContaining({ secretName: 'my-keys' }),
      }),
    );
    const mount = launcher.spec?.containers
      .find((c) => c.name === 'compute')
      ?.volumeMounts?.find((m) => m.name === 'my-keys-access-cred');
    expect(mount).toMatchObject({
      mountPath: '/var/run/kubevirt-private/secret/my-keys-access-cred',
      readOnly: true,
    });
    // What the kubelet mounted, read inside the compute container.
    const mounted = kubectl(
      'exec',
      '-n',
      NS,
      launcher.metadata?.name ?? '',
      '-c',
      'compute',
      '--',
      'cat',
      '/var/run/kubevirt-private/secret/my-keys-access-cred/key1',
    );
    expect(mounted.trim()).toBe(pub);

    const console_ = await SerialConsole.connect(
      join(
        shortDir(
          podEmptyDirPath(join(info.stateDir, 'kubelet', 'pods'), launcher.metadata?.uid ?? '', 'sockets'),
        ),
        CONSOLE_SOCKET,
      ),
      30_000,
    );
    try {
      const out = await console_.waitFor(/KUBEVIRT-TS-GUEST-SSH [^\n]*\n/, 300_000);
      const marker = /KUBEVIRT-TS-GUEST-SSH [^\r\n]*/.exec(out)?.[0];
      process.stdout.write(`cluster guest: ${marker}\n`);
      expect(marker).toBe('KUBEVIRT-TS-GUEST-SSH dropbear tcp/22 authorized_keys=1 source=nocloud');
      // The console's shell: the key the guest installed is the Secret's.
      expect((await console_.run('cat /root/.ssh/authorized_keys', 60_000)).trim()).toBe(pub);
    } finally {
      console_.close();
    }
  });
});
