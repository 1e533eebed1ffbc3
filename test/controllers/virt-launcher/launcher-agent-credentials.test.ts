/**
 * virt-launcher's guest-agent access credentials on the fake driver, over the real gRPC
 * socket (upstream's AccessCredentialManager): qemuGuestAgent SSH keys and userPassword
 * Secrets reach the guest's agent once it connects, a changed Secret is applied again,
 * and the domain report carries the result (AccessCredentialsSynchronized's source).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeDriver, type FakeHost } from '../../../src/drivers';
import { waitFor } from '../../support/wait';
import { type FakeLauncher, fakeLauncherVmi, startFakeLauncher } from './fake-launcher';

const ref = { namespace: 'ns1', name: 'vm1' };

function credVmi() {
  const vmi = fakeLauncherVmi();
  vmi.spec.accessCredentials = [
    {
      sshPublicKey: {
        source: { secret: { secretName: 'keys' } },
        propagationMethod: { qemuGuestAgent: { users: ['root', 'alice'] } },
      },
    },
    { userPassword: { source: { secret: { secretName: 'pw' } }, propagationMethod: { qemuGuestAgent: {} } } },
  ];
  return vmi;
}

describe('VirtLauncher guest-agent access credentials (fake driver)', () => {
  let fake: FakeLauncher;
  let host: FakeHost;
  let secrets: string;

  beforeEach(async () => {
    secrets = mkdtempSync(join(tmpdir(), 'kvts-creds-'));
    fake = await startFakeLauncher({
      dirPrefix: 'kvts-launcher-creds-',
      launcher: {
        agentPollMs: 20,
        agentConnectPollMs: 20,
        accessCredentialDir: (s) => join(secrets, `${s}-access-cred`),
      },
    });
    host = fake.host;
  });

  afterEach(async () => {
    await fake.close();
    rmSync(secrets, { recursive: true, force: true });
  });

  const secret = (name: string, files: Record<string, string>) => {
    const dir = join(secrets, `${name}-access-cred`);
    mkdirSync(dir, { recursive: true });
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
  };

  it('sets keys and passwords through the agent when it connects, and again when the Secret changes', async () => {
    secret('keys', { a: 'ssh-ed25519 AAAAone one@x\n\nssh-ed25519 AAAAtwo two@x\n' });
    secret('pw', { root: 's3cret\n' });
    await fake.client.syncVirtualMachine(credVmi());
    await waitFor(
      'offline reported',
      async () => (await fake.domain())?.accessCredential?.message === 'Guest agent is offline',
    );
    expect((await fake.domain())?.accessCredential?.succeeded).toBe(false);

    const agent = new FakeDriver({ host }).guestAgent;
    agent.connect(ref);
    await waitFor('synchronized', async () => (await fake.domain())?.accessCredential?.succeeded === true);
    expect((await fake.domain())?.accessCredential).toEqual({ succeeded: true, message: '' });
    expect(agent.authorizedKeys(ref, 'root')).toEqual([
      'ssh-ed25519 AAAAone one@x',
      'ssh-ed25519 AAAAtwo two@x',
    ]);
    expect(agent.authorizedKeys(ref, 'alice')).toEqual([
      'ssh-ed25519 AAAAone one@x',
      'ssh-ed25519 AAAAtwo two@x',
    ]);
    expect(agent.password(ref, 'root')).toBe('s3cret');

    // The kubelet updates the mounted Secret: the next poll applies it.
    secret('keys', { b: 'ssh-rsa AAAAthree three@x' });
    secret('pw', { root: 'n3w' });
    await waitFor('new key in the guest', () => agent.authorizedKeys(ref, 'root')?.length === 3);
    expect(agent.authorizedKeys(ref, 'root')?.[2]).toBe('ssh-rsa AAAAthree three@x');
    await waitFor('new password', () => agent.password(ref, 'root') === 'n3w');
  });

  it('reports a Secret it cannot read as AccessCredentialsSynchronized False with the reason', async () => {
    secret('pw', { root: 'x' });
    await fake.client.syncVirtualMachine(credVmi());
    new FakeDriver({ host }).guestAgent.connect(ref);
    const d = await waitFor('failure reported', async () => {
      const x = await fake.domain();
      return x?.accessCredential?.message.includes('keys-access-cred') ? x : undefined;
    });
    expect(d.accessCredential?.succeeded).toBe(false);
    expect(d.accessCredential?.message).toMatch(/reading the list of secrets files .*keys-access-cred/);
    // The Secret arrives: the next poll succeeds.
    secret('keys', { a: 'ssh-ed25519 AAAAone one@x' });
    await waitFor('synchronized', async () => (await fake.domain())?.accessCredential?.succeeded === true);
  });

  it('reports nothing for a VMI without qemuGuestAgent credentials', async () => {
    await fake.client.syncVirtualMachine(fakeLauncherVmi());
    new FakeDriver({ host }).guestAgent.connect(ref);
    await waitFor('agent connected', async () => (await fake.domain())?.guestAgent?.connected === true);
    expect((await fake.domain())?.accessCredential).toBeUndefined();
  });
});
