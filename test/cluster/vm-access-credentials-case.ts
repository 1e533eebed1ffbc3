/**
 * accessCredentials on the real one-node cluster, run by vm-tiny.test.ts after its own VM
 * (it installs the components the case needs, and its restarts and removal would disturb
 * a VM of another file running beside it): the kubelet mounts the Secret named by a VM's
 * `accessCredentials` (noCloud) into the launcher pod as upstream renders it (volume
 * `<name>-access-cred` at /var/run/kubevirt-private/secret/<name>-access-cred), the
 * launcher reads its key from that mount (the kubelet's own secret-volume layout) into the
 * cloud-init NoCloud meta-data, and the tiny guest (recipe 9, booting from its
 * containerDisk) installs exactly that key: its serial console says
 * `authorized_keys=1 source=nocloud`, and its authorized_keys is the Secret's key.
 * (virtctl ssh with the key is exercised in local mode, test/e2e/access-credentials-local.test.ts.)
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { type ClusterVmContext, deleteVm, startVm, vmManifest } from './vm-network-cases';

/** Registers the accessCredentials case; `ctx` is read when it runs. */
export function registerAccessCredentialsCase(ctx: () => ClusterVmContext): void {
  it('accessCredentials (noCloud): the kubelet mounts the Secret, the guest installs exactly its key', async () => {
    const c = ctx();
    const name = 'vm-tiny-keys';
    const key = join(c.dir, 'id_ed25519_acred');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kvts-cluster-acred', '-f', key]);
    const pub = readFileSync(`${key}.pub`, 'utf8').trim();
    await c.core.createNamespacedSecret({
      namespace: c.namespace,
      body: { metadata: { name: 'my-keys' }, stringData: { key1: `${pub}\n` } },
    });
    const vm = JSON.parse(
      vmManifest(name, c.namespace, [{ name: 'default', masquerade: {} }], [{ name: 'default', pod: {} }]),
    );
    const spec = vm.spec.template.spec;
    spec.domain.devices.disks.push({ name: 'cloudinitdisk', disk: { bus: 'virtio' } });
    spec.volumes.push({ name: 'cloudinitdisk', cloudInitNoCloud: { userData: '#cloud-config\n' } });
    spec.accessCredentials = [
      { sshPublicKey: { source: { secret: { secretName: 'my-keys' } }, propagationMethod: { noCloud: {} } } },
    ];
    const started = await startVm(c, name, JSON.stringify(vm));
    try {
      const launcher = started.launcher;
      expect(launcher.spec?.volumes).toContainEqual(
        expect.objectContaining({
          name: 'my-keys-access-cred',
          secret: expect.objectContaining({ secretName: 'my-keys' }),
        }),
      );
      const mount = launcher.spec?.containers
        .find((x) => x.name === 'compute')
        ?.volumeMounts?.find((m) => m.name === 'my-keys-access-cred');
      expect(mount).toMatchObject({
        mountPath: '/var/run/kubevirt-private/secret/my-keys-access-cred',
        readOnly: true,
      });
      // What the kubelet mounted, read inside the compute container.
      const mounted = c.kubectl(
        'exec',
        '-n',
        c.namespace,
        launcher.metadata?.name ?? '',
        '-c',
        'compute',
        '--',
        'cat',
        '/var/run/kubevirt-private/secret/my-keys-access-cred/key1',
      );
      expect(mounted.trim()).toBe(pub);
      const out = await started.con.waitFor(/KUBEVIRT-TS-GUEST-SSH [^\n]*\n/, 300_000);
      const marker = /KUBEVIRT-TS-GUEST-SSH [^\r\n]*/.exec(out)?.[0];
      process.stdout.write(`cluster guest ${name}: ${marker}\n`);
      expect(marker).toBe('KUBEVIRT-TS-GUEST-SSH dropbear tcp/22 authorized_keys=1 source=nocloud');
      // The console's shell: the key the guest installed is the Secret's.
      expect((await started.con.run('cat /root/.ssh/authorized_keys', 60_000)).trim()).toBe(pub);
    } finally {
      started.con.close();
      await deleteVm(c, name);
    }
  });
}
