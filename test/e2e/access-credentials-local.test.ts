/**
 * `spec.accessCredentials` end to end in local mode (what `kubevirt-ts up` runs), with the
 * real tiny guest (recipe 9: it takes SSH keys from cloud-init meta-data, as cloud-init
 * does) on a test bridge with the masquerade binding: an SSH public key in a Secret,
 * propagated by noCloud in one VM and by configDrive in another (their cloud-init user data
 * holds no key), lets `virtctl ssh` (the built CLI, the system's OpenSSH over
 * `port-forward --stdio`) run a command in each guest; a key that is not in the Secret is
 * refused. The Secret reaches the launcher as the launcher pod's secret volume
 * (`<name>-access-cred`), which the local pod runtime materializes like kubelet.
 * A third VM, without any cloud-init disk, gets its keys through the guest agent
 * (propagationMethod qemuGuestAgent, Debian's real qemu-ga in the tiny guest): the VMI's
 * AccessCredentialsSynchronized turns True, `virtctl credentials add-ssh-key` adds a
 * second key to the Secret and it reaches the running guest (the pod runtime resyncs the
 * secret volume, the launcher rewrites root's authorized_keys), and `remove-ssh-key`
 * takes the first one out again. A fourth, with a userPassword Secret, shows the real
 * agent's answer to guest-set-user-password (the busybox guest has no chpasswd) as the
 * condition's False message, and `credentials set-password` patching the Secret.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { applyObjects, loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { netnsName } from '../../src/controllers/local/pod-runtime/pod-network';
import {
  PodType,
  SecretType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { SerialConsole } from '../support/guest';
import { canTestNetworking, netSnapshot, networkGuestDir, scopedSnapshot } from '../support/net-snapshot';
import { repoRoot } from '../support/netns-process';
import { runVirtctl } from '../support/virtctl-process';
import { cliBuilt, cliEntry, e2eRun, waitFor } from './node-harness';

const guest = networkGuestDir(undefined, 9);
const hasSsh = ['ssh', 'ssh-keygen'].every((b) => existsSync(`/usr/bin/${b}`));
const run = e2eRun('accessCredentials in local mode', () =>
  !canTestNetworking()
    ? 'needs root and /usr/lib/cni (containernetworking-plugins)'
    : !cliBuilt()
      ? 'npm run build first'
      : !guest
        ? 'no tiny guest of recipe 9 or later (SSH keys from cloud-init meta-data): run scripts/guest/build.sh'
        : !hasSsh
          ? "needs OpenSSH's ssh and ssh-keygen (openssh-client)"
          : undefined,
);

describe.runIf(run)(
  'accessCredentials: an SSH key from a Secret through noCloud and configDrive (real guests)',
  () => {
    const tag = process.pid % 10000;
    const bridge = `kvtsa${tag}`;
    const subnet = '10.244.84.0/24';
    const names = { noCloud: `ac-nc-${process.pid}`, configDrive: `ac-cd-${process.pid}` };
    const qgaName = `ac-qga-${process.pid}`;
    const pwName = `ac-pw-${process.pid}`;
    const logs: string[] = [];
    let state: string;
    let node: LocalNode;
    let scopedBefore: ReturnType<typeof scopedSnapshot>;
    const launcherNs: string[] = [];
    const virtctl = join(dirname(cliEntry()), 'virtctl.js');

    beforeAll(async () => {
      scopedBefore = scopedSnapshot([], bridge);
      state = mkdtempSync(join(tmpdir(), 'kvts-acred-'));
      chmodSync(state, 0o755);
      const paths = statePaths(state);
      node = new LocalNode({
        paths,
        podNetwork: { subnet, bridge },
        log: (c, m) => {
          logs.push(`${c}: ${m}`);
          if (process.env.KUBEVIRT_TS_NODE_LOG) console.log(`${c}: ${m}`);
        },
      });
      await node.start();
      new ImageStore(paths.images).import('kubevirt-ts/tiny-guest', guest ?? '');
    }, 60_000);

    afterAll(async () => {
      for (const n of [...Object.values(names), qgaName, pwName])
        await node?.store.delete(VirtualMachineType, n, { namespace: 'default' }).catch(() => undefined);
      // The pod objects go at once; their namespaces when the pod runtime has torn them down.
      await waitFor(
        'launcher pods and their namespaces to go',
        async () =>
          (await node.store.list(PodType, { namespace: 'default' })).items.length === 0 &&
          !netSnapshot().netns.some((n) => launcherNs.includes(n)),
        240_000,
      ).catch(() => undefined);
      await node?.stop();
      try {
        execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
      } catch {
        // never made
      }
      rmSync(state, { recursive: true, force: true });
      expect(scopedSnapshot(launcherNs, bridge)).toEqual(scopedBefore);
    }, 300_000);

    const cli = (args: string[], timeout?: number) => runVirtctl(virtctl, state, args, timeout);
    const sshOpts = (identity: string) => [
      '-i',
      identity,
      '-t',
      '-o IdentitiesOnly=yes',
      '-t',
      '-o StrictHostKeyChecking=no',
      '-t',
      '-o UserKnownHostsFile=/dev/null',
      '-t',
      '-o BatchMode=yes',
      '-t',
      '-o LogLevel=ERROR',
    ];

    /** Waits for the VM's VMI to run and its guest to print the SSH marker; returns the marker line. */
    async function sshMarker(name: string): Promise<string> {
      const pod = await waitFor(
        `the launcher pod of ${name}`,
        async () => {
          const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
          return pods.items.find((p) => p.metadata?.name?.includes(name) && p.status?.podIP);
        },
        180_000,
      );
      launcherNs.push(netnsName(pod.metadata?.uid ?? ''));
      await waitFor(
        `VMI ${name} Running`,
        async () =>
          (
            await node.store.get<VirtualMachineInstance & KubeObject>(
              VirtualMachineInstanceType,
              name,
              'default',
            )
          ).status?.phase === 'Running',
        300_000,
      );
      const sockets = podEmptyDirPath(statePaths(state).pods, pod.metadata?.uid ?? '', 'sockets');
      const console_ = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 60_000);
      try {
        const out = await console_.waitFor(/KUBEVIRT-TS-GUEST-SSH [^\n]*\n/, 300_000);
        return /KUBEVIRT-TS-GUEST-SSH [^\r\n]*/.exec(out)?.[0] ?? '';
      } finally {
        console_.close();
      }
    }

    it('virtctl ssh logs in with the Secret key in both guests and is refused with another key', {
      timeout: 900_000,
    }, async () => {
      const key = join(state, 'id_ed25519');
      const other = join(state, 'other');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kvts-acred', '-f', key]);
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'not-in-secret', '-f', other]);
      const pub = readFileSync(`${key}.pub`, 'utf8');
      await node.store.create(SecretType, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'my-ssh-keys', namespace: 'default' },
        type: 'Opaque',
        data: { key1: Buffer.from(pub).toString('base64') },
      } as KubeObject);

      const base = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
      const objects: string[] = [];
      for (const [method, name] of Object.entries(names) as Array<['noCloud' | 'configDrive', string]>) {
        const vm = structuredClone(base);
        vm.metadata.name = name;
        vm.spec.template.metadata.labels['kubevirt.io/vm'] = name;
        vm.spec.template.spec.terminationGracePeriodSeconds = 5;
        vm.spec.template.spec.domain.devices.disks = [{ name: 'cloudinitdisk', disk: { bus: 'virtio' } }];
        // User data without keys: the guest can only have the key from the meta-data.
        const ci = { userData: '#cloud-config\nhostname: from-user-data\n' };
        vm.spec.template.spec.volumes = [
          method === 'noCloud'
            ? { name: 'cloudinitdisk', cloudInitNoCloud: ci }
            : { name: 'cloudinitdisk', cloudInitConfigDrive: ci },
        ];
        vm.spec.template.spec.accessCredentials = [
          {
            sshPublicKey: {
              source: { secret: { secretName: 'my-ssh-keys' } },
              propagationMethod: { [method]: {} },
            },
          },
        ];
        objects.push(stringify(vm));
      }
      const file = join(state, 'vms.yaml');
      writeFileSync(file, objects.join('---\n'));
      await applyObjects(
        node.store,
        await loadAndAdmit([file], new ImageStore(statePaths(state).images), true),
      );

      const [ncMarker, cdMarker] = await Promise.all([
        sshMarker(names.noCloud),
        sshMarker(names.configDrive),
      ]);
      process.stdout.write(`noCloud guest: ${ncMarker}\nconfigDrive guest: ${cdMarker}\n`);
      expect(ncMarker).toBe('KUBEVIRT-TS-GUEST-SSH dropbear tcp/22 authorized_keys=1 source=nocloud');
      expect(cdMarker).toBe('KUBEVIRT-TS-GUEST-SSH dropbear tcp/22 authorized_keys=1 source=configdrive');

      for (const name of Object.values(names)) {
        const said = await cli([
          'ssh',
          `root@vmi/${name}`,
          ...sshOpts(key),
          '-c',
          'echo "uid=$(id -u) sum=$((6 * 7))"; cat /root/.ssh/authorized_keys',
        ]);
        expect(said).toMatch(/^uid=0 sum=42$/m);
        // The guest's authorized_keys is exactly the Secret's key.
        expect(said.split('\n').filter((l) => l.startsWith('ssh-'))).toEqual([pub.trim()]);
        process.stdout.write(
          `ssh root@vmi/${name} with the Secret's key: ${said.trim().replace(/\n/g, ' | ')}\n`,
        );
        await expect(cli(['ssh', `root@vmi/${name}`, ...sshOpts(other), '-c', 'true'])).rejects.toThrow(
          /Permission denied/,
        );
        process.stdout.write(`ssh root@vmi/${name} with a key not in the Secret: Permission denied\n`);
      }

      // The launcher pod carries the Secret as upstream renders it.
      const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
      const pod = pods.items.find((p) => p.metadata?.name?.includes(names.noCloud));
      expect(pod?.spec?.volumes).toContainEqual({
        name: 'my-ssh-keys-access-cred',
        secret: { secretName: 'my-ssh-keys' },
      });
    });

    it('qemuGuestAgent propagation: the launcher writes the Secret keys through qemu-ga, and credentials add-ssh-key reaches the running guest', {
      timeout: 900_000,
    }, async () => {
      const k1 = join(state, 'qga1');
      const k2 = join(state, 'qga2');
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'qga-one', '-f', k1]);
      execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'qga-two', '-f', k2]);
      const pub1 = readFileSync(`${k1}.pub`, 'utf8').trim();
      const pub2 = readFileSync(`${k2}.pub`, 'utf8').trim();
      await node.store.create(SecretType, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'qga-keys', namespace: 'default' },
        type: 'Opaque',
        data: { key1: Buffer.from(`${pub1}\n`).toString('base64') },
      } as KubeObject);
      const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
      vm.metadata.name = qgaName;
      vm.spec.template.metadata.labels['kubevirt.io/vm'] = qgaName;
      vm.spec.template.spec.terminationGracePeriodSeconds = 5;
      // No cloud-init disk: the guest's keys can only come through its agent.
      vm.spec.template.spec.accessCredentials = [
        {
          sshPublicKey: {
            source: { secret: { secretName: 'qga-keys' } },
            propagationMethod: { qemuGuestAgent: { users: ['root'] } },
          },
        },
      ];
      const file = join(state, 'vm-qga.yaml');
      writeFileSync(file, stringify(vm));
      await applyObjects(
        node.store,
        await loadAndAdmit([file], new ImageStore(statePaths(state).images), true),
      );
      const marker = await sshMarker(qgaName);
      process.stdout.write(`qemuGuestAgent guest: ${marker}\n`);
      const vmi = () =>
        node.store.get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, qgaName, 'default');
      const synced = await waitFor(
        'AccessCredentialsSynchronized True',
        async () =>
          (await vmi()).status?.conditions?.find(
            (c) => c.type === 'AccessCredentialsSynchronized' && c.status === 'True',
          ),
        120_000,
      );
      process.stdout.write(`condition: ${JSON.stringify(synced)}\n`);
      // Debian's qemu-ga (>= 5.2) has the command the launcher tries first, so the
      // deprecated guest-exec/guest-file path is not needed with this guest.
      const info = JSON.parse(await cli(['guestosinfo', qgaName])) as {
        supportedCommands?: Array<{ name: string; enabled: boolean }>;
      };
      expect(info.supportedCommands).toContainEqual({ name: 'guest-ssh-add-authorized-keys', enabled: true });
      expect(info.supportedCommands).toContainEqual({ name: 'guest-set-user-password', enabled: true });
      // The tiny guest's /etc/start-ssh empties authorized_keys when dropbear starts, which
      // may be after the agent wrote it: the key added next makes the launcher write both.
      const added = await cli([
        'credentials',
        'add-ssh-key',
        '--user',
        'root',
        '--file',
        `${k2}.pub`,
        '--force',
        qgaName,
      ]);
      expect(added.trim()).toBe('Successfully added the key to secret "qga-keys"');
      const said = await waitFor(
        'the added key to log in',
        () =>
          cli(
            ['ssh', `root@vmi/${qgaName}`, ...sshOpts(k2), '-c', 'cat /root/.ssh/authorized_keys'],
            60_000,
          ).catch(() => undefined),
        180_000,
      );
      process.stdout.write(`ssh with the added key: ${said.trim().replace(/\n/g, ' | ')}\n`);
      expect(said.split('\n').filter((l) => l.startsWith('ssh-'))).toEqual([pub1, pub2]);
      const first = await cli(['ssh', `root@vmi/${qgaName}`, ...sshOpts(k1), '-c', 'echo ok-$((6 * 7))']);
      expect(first.trim()).toBe('ok-42');
      // remove-ssh-key: the launcher rewrites the file without it.
      await cli(['credentials', 'remove-ssh-key', '--user', 'root', '--value', pub1, '--force', qgaName]);
      await waitFor(
        'the removed key to be refused',
        () =>
          cli(['ssh', `root@vmi/${qgaName}`, ...sshOpts(k1), '-c', 'true'], 60_000).then(
            () => false,
            (e: Error) => /Permission denied/.test(e.message),
          ),
        180_000,
      );
      const left = await cli([
        'ssh',
        `root@vmi/${qgaName}`,
        ...sshOpts(k2),
        '-c',
        'cat /root/.ssh/authorized_keys',
      ]);
      expect(left.split('\n').filter((l) => l.startsWith('ssh-'))).toEqual([pub2]);
    });

    it('userPassword: the real qemu-ga is asked and its failure (no chpasswd in busybox) is the condition; set-password patches the Secret', {
      timeout: 600_000,
    }, async () => {
      await node.store.create(SecretType, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'qga-pw', namespace: 'default' },
        type: 'Opaque',
        data: { root: Buffer.from('first').toString('base64') },
      } as KubeObject);
      const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
      vm.metadata.name = pwName;
      vm.spec.template.metadata.labels['kubevirt.io/vm'] = pwName;
      vm.spec.template.spec.terminationGracePeriodSeconds = 5;
      vm.spec.template.spec.accessCredentials = [
        {
          userPassword: {
            source: { secret: { secretName: 'qga-pw' } },
            propagationMethod: { qemuGuestAgent: {} },
          },
        },
      ];
      const file = join(state, 'vm-pw.yaml');
      writeFileSync(file, stringify(vm));
      await applyObjects(
        node.store,
        await loadAndAdmit([file], new ImageStore(statePaths(state).images), true),
      );
      await sshMarker(pwName);
      // Debian's busybox-static has no chpasswd applet, which qemu-ga's guest-set-user-password
      // runs (its error names it 'passwd').
      const cond = await waitFor(
        'AccessCredentialsSynchronized False with the agent error',
        async () =>
          (
            await node.store.get<VirtualMachineInstance & KubeObject>(
              VirtualMachineInstanceType,
              pwName,
              'default',
            )
          ).status?.conditions?.find(
            (c) =>
              c.type === 'AccessCredentialsSynchronized' &&
              c.status === 'False' &&
              c.message !== 'Guest agent is offline',
          ),
        120_000,
      );
      process.stdout.write(`userPassword condition: ${JSON.stringify(cond)}\n`);
      expect(cond.message).toMatch(
        /^Error encountered setting password for user \[root\]: .*'guest-set-user-password': cannot find 'passwd' program in PATH$/,
      );
      const said = await cli([
        'credentials',
        'set-password',
        '--user',
        'root',
        '--password',
        's3cret',
        '--force',
        pwName,
      ]);
      expect(said.trim()).toBe('Successfully set password in secret "qga-pw"');
      const secret = await node.store.get<KubeObject & { data: Record<string, string> }>(
        SecretType,
        'qga-pw',
        'default',
      );
      expect(Buffer.from(secret.data.root, 'base64').toString()).toBe('s3cret');
      await expect(
        cli(['credentials', 'set-password', '--user', 'root', '--password', 'x', pwName]),
      ).rejects.toThrow('secret qga-pw does not have an owner reference pointing to VM');
    });
  },
);
