/**
 * What `virtctl credentials` does to the API, as upstream's pkg/virtctl/credentials
 * (addkey, removekey, password, common): the VM's `spec.template.spec.accessCredentials`
 * name the Secrets; `add-ssh-key` adds the key under a new `ssh-key-<random>` entry of the
 * user's qemuGuestAgent Secret (or creates a Secret owned by the VM and adds an
 * accessCredentials entry for it), `remove-ssh-key` drops the key's lines from each of the
 * user's Secrets, `set-password` sets `data.<user>` of the VM's userPassword Secret. A
 * Secret not owned by the VM is changed only with `force`. The launcher applies a changed
 * Secret through the guest agent (controllers/virt-launcher/agent-credentials.ts).
 */
import { randomInt } from 'node:crypto';
import type { AccessCredential } from '../../../api/generated/types';
import { isConflict, isNotFound } from '../../../controllers/runtime/errors';
import {
  SecretType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../../controllers/runtime/resources';
import type { JsonPatchOp, KubeObject, ObjectClient } from '../../../controllers/runtime/types';

/** The VM fields the commands read. */
export interface CredentialsVm extends KubeObject {
  spec?: { template?: { spec?: { accessCredentials?: AccessCredential[] } } };
}

interface Secret extends KubeObject {
  data?: Record<string, string>;
}

/** Where the commands act. */
export interface CredentialsTarget {
  client: ObjectClient;
  namespace: string;
}

/** Upstream's common.RandomWithPrefix: six characters of k8s rand.String's alphabet. */
export function randomWithPrefix(prefix: string): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = prefix;
  for (let i = 0; i < 6; i++) s += alphabet[randomInt(alphabet.length)];
  return s;
}

/** The Secrets of the VM's qemuGuestAgent SSH entries that list `user` (upstream GetSSHSecretsForUser). */
export function sshSecretsForUser(creds: AccessCredential[] | undefined, user: string): string[] {
  return (creds ?? []).flatMap((c) => {
    const name = c.sshPublicKey?.source?.secret?.secretName;
    const users = c.sshPublicKey?.propagationMethod?.qemuGuestAgent?.users;
    return name && users?.includes(user) ? [name] : [];
  });
}

/** The Secrets of the VM's qemuGuestAgent userPassword entries. */
export function passwordSecrets(creds: AccessCredential[] | undefined): string[] {
  return (creds ?? []).flatMap((c) => {
    const name = c.userPassword?.source?.secret?.secretName;
    return name && c.userPassword?.propagationMethod?.qemuGuestAgent ? [name] : [];
  });
}

/** `--secret` if it is one of `secrets`, else the only one (upstream FindSecretOrGetFirst). */
export function findSecretOrGetFirst(secret: string | undefined, secrets: string[]): string {
  if (!secret) {
    if (secrets.length > 1)
      throw new Error('multiple secrets specified, use option --secret to specify which secret to modify');
    return secrets[0];
  }
  if (secrets.includes(secret)) return secret;
  throw new Error(`secret ${secret} was not assigned`);
}

function ownedByVm(obj: KubeObject, vm: KubeObject): boolean {
  return (obj.metadata?.ownerReferences ?? []).some(
    (r) => r.kind === 'VirtualMachine' && r.name === vm.metadata?.name && r.uid === vm.metadata?.uid,
  );
}

function requireOwned(secret: KubeObject, vm: KubeObject): void {
  if (!ownedByVm(secret, vm))
    throw new Error(
      `secret ${secret.metadata?.name} does not have an owner reference pointing to VM ${vm.metadata?.name}`,
    );
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString();
/** upstream LineContainsKey: the line, trimmed, starts with the key. */
const lineHasKey = (line: string, key: string) => line.trim().startsWith(key);

async function getVm(t: CredentialsTarget, name: string): Promise<CredentialsVm> {
  try {
    return await t.client.get<CredentialsVm>(VirtualMachineType, name, t.namespace);
  } catch (e) {
    throw new Error(`error getting virtual machine: ${(e as Error).message}`, { cause: e });
  }
}

/** Adds `path: value` to the object's `/data`, creating `/data` when it is missing (upstream's two patches). */
async function addSecretData(t: CredentialsTarget, secretName: string, key: string, value: string) {
  // RFC 6901 escaping: a user name with `/` or `~` still names one key.
  const path = `/data/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
  try {
    await t.client.patch(SecretType, secretName, [{ op: 'add', path, value: b64(value) }], {
      type: 'json',
      namespace: t.namespace,
    });
  } catch {
    const full: JsonPatchOp[] = [
      { op: 'test', path: '/data', value: null },
      { op: 'add', path: '/data', value: {} },
      { op: 'add', path, value: b64(value) },
    ];
    try {
      await t.client.patch(SecretType, secretName, full, { type: 'json', namespace: t.namespace });
    } catch (e) {
      throw new Error(`error patching secret "${secretName}": ${(e as Error).message}`, { cause: e });
    }
  }
}

/** Options of {@link addSshKey} (upstream's flags). */
export interface AddSshKeyOptions {
  user: string;
  key: string;
  secret?: string;
  createSecret?: boolean;
  updateSecret?: boolean;
  force?: boolean;
}

/** `credentials add-ssh-key`; returns upstream's message. */
export async function addSshKey(t: CredentialsTarget, vmName: string, o: AddSshKeyOptions): Promise<string> {
  const vm = await getVm(t, vmName);
  const creds = vm.spec?.template?.spec?.accessCredentials;
  const secrets = sshSecretsForUser(creds, o.user);
  const create = o.createSecret || (!o.updateSecret && secrets.length === 0);
  if (create) {
    if (!o.force) {
      const running = await t.client.get(VirtualMachineInstanceType, vmName, t.namespace).then(
        () => true,
        (e) => {
          if (isNotFound(e)) return false;
          throw new Error(`error when getting virtual machine instance: ${(e as Error).message}`, {
            cause: e,
          });
        },
      );
      if (running)
        throw new Error(
          `virtual machine ${vmName} is running. Use --force flag to update a running VM, it will take effect after restart`,
        );
    }
    let secret: Secret;
    try {
      secret = await t.client.create<Secret>(SecretType, {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {
          generateName: `${vmName}-ssh-key-`,
          namespace: t.namespace,
          ownerReferences: [
            {
              apiVersion: 'kubevirt.io/v1',
              kind: 'VirtualMachine',
              name: vmName,
              uid: vm.metadata?.uid ?? '',
              controller: true,
            },
          ],
        },
        data: { [randomWithPrefix('ssh-key-')]: b64(o.key) },
      });
    } catch (e) {
      throw new Error(`error creating secret: ${(e as Error).message}`, { cause: e });
    }
    const entry: AccessCredential = {
      sshPublicKey: {
        source: { secret: { secretName: secret.metadata?.name ?? '' } },
        propagationMethod: { qemuGuestAgent: { users: [o.user] } },
      },
    };
    const listPath = '/spec/template/spec/accessCredentials';
    const patch = (ops: JsonPatchOp[]) =>
      t.client.patch(VirtualMachineType, vmName, ops, { type: 'json', namespace: t.namespace });
    try {
      await patch([{ op: 'add', path: `${listPath}/-`, value: entry }]);
    } catch {
      try {
        await patch([
          { op: 'test', path: listPath, value: null },
          { op: 'add', path: listPath, value: [] },
          { op: 'add', path: `${listPath}/-`, value: entry },
        ]);
      } catch (e) {
        throw new Error(`error patching virtual machine: ${(e as Error).message}`, { cause: e });
      }
    }
    return `Successfully created secret "${secret.metadata?.name}" with the key and assigned it to VM "${vmName}"`;
  }
  if (secrets.length === 0) throw new Error(`no secrets specified for user: ${o.user}`);
  const secretName = findSecretOrGetFirst(o.secret, secrets);
  let secret: Secret;
  try {
    secret = await t.client.get<Secret>(SecretType, secretName, t.namespace);
  } catch (e) {
    throw new Error(`error getting secret "${secretName}": ${(e as Error).message}`, { cause: e });
  }
  const has = Object.values(secret.data ?? {}).some((v) =>
    unb64(v)
      .split('\n')
      .some((l) => lineHasKey(l, o.key)),
  );
  if (has) return `Secret "${secretName}" already contains this SSH key.`;
  if (!o.force) requireOwned(secret, vm);
  await addSecretData(t, secretName, randomWithPrefix('ssh-key-'), o.key);
  return `Successfully added the key to secret "${secretName}"`;
}

/** Options of {@link removeSshKey}. */
export interface RemoveSshKeyOptions {
  user: string;
  key: string;
  secret?: string;
  force?: boolean;
}

/** `credentials remove-ssh-key`; returns a message when there was nothing to do. */
export async function removeSshKey(
  t: CredentialsTarget,
  vmName: string,
  o: RemoveSshKeyOptions,
): Promise<string | undefined> {
  const vm = await getVm(t, vmName);
  const secrets = sshSecretsForUser(vm.spec?.template?.spec?.accessCredentials, o.user);
  if (secrets.length === 0) return `No secrets associated with user ${o.user}`;
  if (o.secret && !secrets.includes(o.secret))
    throw new Error(`secret ${o.secret} is not associated with user ${o.user}`);
  for (const secretName of o.secret ? [o.secret] : secrets) {
    // Read, edit, replace; again on a conflict (upstream's RetryOnConflict).
    for (let attempt = 0; ; attempt++) {
      let secret: Secret;
      try {
        secret = await t.client.get<Secret>(SecretType, secretName, t.namespace);
      } catch (e) {
        if (isNotFound(e)) break;
        throw e;
      }
      if (!o.force) requireOwned(secret, vm);
      const data: Record<string, string> = {};
      for (const [file, value] of Object.entries(secret.data ?? {})) {
        const kept = unb64(value)
          .split('\n')
          .filter((l) => !lineHasKey(l, o.key) && l.trim() !== '');
        if (kept.length) data[file] = b64(kept.join('\n'));
      }
      try {
        await t.client.update(SecretType, { ...secret, data });
        break;
      } catch (e) {
        if (isNotFound(e)) break;
        if (!isConflict(e) || attempt >= 4) throw e;
      }
    }
  }
  return undefined;
}

/** Options of {@link setPassword}. */
export interface SetPasswordOptions {
  user: string;
  password: string;
  secret?: string;
  force?: boolean;
}

/** `credentials set-password`; returns upstream's message. */
export async function setPassword(
  t: CredentialsTarget,
  vmName: string,
  o: SetPasswordOptions,
): Promise<string> {
  const vm = await getVm(t, vmName);
  const secrets = passwordSecrets(vm.spec?.template?.spec?.accessCredentials);
  if (secrets.length === 0) throw new Error('no secrets assigned to UserPassword AccessCredentials');
  const secretName = findSecretOrGetFirst(o.secret, secrets);
  if (!o.force) {
    let secret: Secret;
    try {
      secret = await t.client.get<Secret>(SecretType, secretName, t.namespace);
    } catch (e) {
      throw new Error(`error getting secret "${secretName}": ${(e as Error).message}`, { cause: e });
    }
    requireOwned(secret, vm);
  }
  await addSecretData(t, secretName, o.user, o.password);
  return `Successfully set password in secret "${secretName}"`;
}
