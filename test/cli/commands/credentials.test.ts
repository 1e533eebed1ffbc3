/**
 * virtctl credentials add-ssh-key / remove-ssh-key / set-password on the embedded store:
 * the Secret and VM changes upstream's pkg/virtctl/credentials makes, with its flags'
 * rules (owner reference unless --force, --create-secret refused for a running VM unless
 * --force, --secret choosing among several).
 */
import { describe, expect, it } from 'vitest';
import { addSshKey, removeSshKey, setPassword } from '../../../src/cli/commands/virtctl/credentials-secrets';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import {
  SecretType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';

type Secret = KubeObject & { data?: Record<string, string> };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const text = (s: Secret) => Object.values(s.data ?? {}).map((v) => Buffer.from(v, 'base64').toString());

async function setup(creds: unknown[]) {
  const store = await EmbeddedStore.open();
  const t = { client: store, namespace: 'default' };
  const vm = await store.create<KubeObject>(VirtualMachineType, {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: 'vm1', namespace: 'default' },
    spec: {
      runStrategy: 'Halted',
      template: { spec: { domain: { devices: {} }, accessCredentials: creds } },
    },
  } as KubeObject);
  const owner = [
    { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', name: 'vm1', uid: vm.metadata?.uid ?? '' },
  ];
  const secret = (name: string, data?: Record<string, string>, owned = true) =>
    store.create<Secret>(SecretType, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: 'default', ...(owned ? { ownerReferences: owner } : {}) },
      ...(data ? { data } : {}),
    } as Secret);
  const get = (name: string) => store.get<Secret>(SecretType, name, 'default');
  return { store, t, vm, secret, get };
}

const qga = (secretName: string, users: string[]) => ({
  sshPublicKey: { source: { secret: { secretName } }, propagationMethod: { qemuGuestAgent: { users } } },
});

describe('virtctl credentials', () => {
  it("add-ssh-key adds the key to the user's owned Secret, once; remove-ssh-key takes it out", async () => {
    const { t, secret, get } = await setup([qga('keys', ['root'])]);
    await secret('keys', { a: b64('ssh-ed25519 AAAAone one') });
    expect(await addSshKey(t, 'vm1', { user: 'root', key: 'ssh-ed25519 AAAAtwo two' })).toBe(
      'Successfully added the key to secret "keys"',
    );
    const s = await get('keys');
    expect(Object.keys(s.data ?? {})).toEqual(['a', expect.stringMatching(/^ssh-key-[a-z0-9]{6}$/)]);
    expect(text(s)).toEqual(['ssh-ed25519 AAAAone one', 'ssh-ed25519 AAAAtwo two']);
    expect(await addSshKey(t, 'vm1', { user: 'root', key: 'ssh-ed25519 AAAAtwo two' })).toBe(
      'Secret "keys" already contains this SSH key.',
    );
    await removeSshKey(t, 'vm1', { user: 'root', key: 'ssh-ed25519 AAAAone' });
    expect(text(await get('keys'))).toEqual(['ssh-ed25519 AAAAtwo two']);
    expect(await removeSshKey(t, 'vm1', { user: 'alice', key: 'x' })).toBe(
      'No secrets associated with user alice',
    );
  });

  it('refuses a Secret the VM does not own unless --force, and a Secret without data gets /data', async () => {
    const { t, secret, get } = await setup([qga('shared', ['root'])]);
    await secret('shared', undefined, false);
    await expect(addSshKey(t, 'vm1', { user: 'root', key: 'k1' })).rejects.toThrow(
      'secret shared does not have an owner reference pointing to VM vm1',
    );
    await addSshKey(t, 'vm1', { user: 'root', key: 'k1', force: true });
    expect(text(await get('shared'))).toEqual(['k1']);
  });

  it('--create-secret (or no Secret for the user) creates an owned Secret and adds the accessCredentials entry', async () => {
    const { store, t, vm } = await setup([]);
    const msg = await addSshKey(t, 'vm1', { user: 'root', key: 'ssh-ed25519 AAAAk k' });
    const vm2 = await store.get<
      KubeObject & { spec: { template: { spec: { accessCredentials: unknown[] } } } }
    >(VirtualMachineType, 'vm1', 'default');
    const entry = vm2.spec.template.spec.accessCredentials[0] as ReturnType<typeof qga>;
    const name = entry.sshPublicKey.source.secret.secretName;
    expect(name).toMatch(/^vm1-ssh-key-/);
    expect(msg).toContain(name);
    expect(entry.sshPublicKey.propagationMethod).toEqual({ qemuGuestAgent: { users: ['root'] } });
    const s = await store.get<Secret>(SecretType, name, 'default');
    expect(text(s)).toEqual(['ssh-ed25519 AAAAk k']);
    expect(s.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        name: 'vm1',
        uid: vm.metadata?.uid,
        controller: true,
      },
    ]);
    // A running VM (its VMI exists) needs --force: the new Secret applies only after a restart.
    await store.create(VirtualMachineInstanceType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'vm1', namespace: 'default' },
      spec: { domain: { devices: {} } },
    } as KubeObject);
    await expect(addSshKey(t, 'vm1', { user: 'bob', key: 'k', createSecret: true })).rejects.toThrow(
      'virtual machine vm1 is running. Use --force flag to update a running VM, it will take effect after restart',
    );
    await expect(addSshKey(t, 'vm1', { user: 'bob', key: 'k', updateSecret: true })).rejects.toThrow(
      'no secrets specified for user: bob',
    );
  });

  it('set-password writes data.<user> of the userPassword Secret; --secret picks among several', async () => {
    const pw = (secretName: string) => ({
      userPassword: { source: { secret: { secretName } }, propagationMethod: { qemuGuestAgent: {} } },
    });
    const { t, secret, get } = await setup([pw('pw1'), pw('pw2')]);
    await secret('pw1', { root: b64('old') });
    await secret('pw2');
    await expect(setPassword(t, 'vm1', { user: 'root', password: 'x' })).rejects.toThrow(
      'multiple secrets specified, use option --secret to specify which secret to modify',
    );
    expect(await setPassword(t, 'vm1', { user: 'root', password: 'n3w', secret: 'pw1' })).toBe(
      'Successfully set password in secret "pw1"',
    );
    expect((await get('pw1')).data).toEqual({ root: b64('n3w') });
    await setPassword(t, 'vm1', { user: 'root', password: 'p2', secret: 'pw2' });
    expect((await get('pw2')).data).toEqual({ root: b64('p2') });
    await expect(setPassword(t, 'vm1', { user: 'root', password: 'p', secret: 'nope' })).rejects.toThrow(
      'secret nope was not assigned',
    );
  });
});
