/**
 * The launcher's guest-agent access credentials (upstream's AccessCredentialManager,
 * pkg/virt-launcher/virtwrap/access-credentials): for each `accessCredentials` entry with
 * propagationMethod `qemuGuestAgent`, the keys of its mounted Secret (each file's lines)
 * become the whole `authorized_keys` of every listed user (a user named by several entries
 * gets all their keys, in spec order), and each file of a `userPassword` Secret sets the
 * password of the user it is named after. {@link sync} runs on every guest-agent poll
 * (the agent connecting, then every 10 s): it re-reads the Secrets and applies them when
 * they differ from what was last applied (and every 5 minutes regardless, as upstream's
 * forced resync: a guest may have lost them), so a Secret the kubelet updates in the pod (what
 * upstream's fsnotify watch catches) reaches the guest within a poll; a failure is retried
 * on the next poll. The result is upstream's AccessCredentialsSynchronized condition.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import type { VirtualMachineInstance } from '../../api';
import type { DomainRef, HypervisorDriver } from '../../drivers/driver';
import type { LauncherAccessCredential } from '../launcher-protocol/domain-report';

/** What one sync should leave in the guest. */
export interface DesiredCredentials {
  /** User to the full list of authorized keys. */
  keys: Record<string, string[]>;
  /** User to password. */
  passwords: Record<string, string>;
}

/** Options of {@link AgentCredentials}. */
export interface AgentCredentialsOptions {
  ref: DomainRef;
  driver: () => HypervisorDriver | undefined;
  /** Host directory where the launcher pod mounts an access-credential Secret. */
  secretDir: (secretName: string) => string;
  /** Called after the reported result changed. */
  onChange: () => void;
  /** Applies everything again after this long even when unchanged, ms (upstream: 5 minutes). */
  resyncMs?: number;
  log?: (message: string) => void;
}

/** The files of a mounted Secret (name and text), kubelet's `..` entries skipped. */
async function secretFiles(dir: string): Promise<Array<[string, string]>> {
  let names: string[];
  try {
    names = (await readdir(dir)).sort();
  } catch (e) {
    throw new Error(
      `error occurred while reading the list of secrets files from the base directory ${dir}: ${(e as Error).message}`,
    );
  }
  const out: Array<[string, string]> = [];
  for (const name of names) {
    if (name.startsWith('..')) continue;
    const file = `${dir}/${name}`;
    // Follows kubelet's per-key links into its `..data` directory.
    if (!(await stat(file).catch(() => undefined))?.isFile()) continue;
    out.push([name, await readFile(file, 'utf8')]);
  }
  return out;
}

/** Whether `vmi` has credentials the guest agent propagates. */
export function hasAgentCredentials(vmi: VirtualMachineInstance | undefined): boolean {
  return (vmi?.spec.accessCredentials ?? []).some(
    (c) =>
      c.sshPublicKey?.propagationMethod?.qemuGuestAgent || c.userPassword?.propagationMethod?.qemuGuestAgent,
  );
}

/** Reads what the guest should get, from the mounted Secrets (upstream's accessCredentialsInfo). */
export async function readDesiredCredentials(
  vmi: VirtualMachineInstance,
  secretDir: (secretName: string) => string,
): Promise<DesiredCredentials> {
  const keys: Record<string, string[]> = {};
  const passwords: Record<string, string> = {};
  const keysOf = new Map<string, string[]>();
  for (const cred of vmi.spec.accessCredentials ?? []) {
    const ssh = cred.sshPublicKey;
    const qga = ssh?.propagationMethod?.qemuGuestAgent;
    if (ssh && qga) {
      const secret = ssh.source?.secret?.secretName;
      if (!secret) continue;
      let secretKeys = keysOf.get(secret);
      if (!secretKeys) {
        secretKeys = (await secretFiles(secretDir(secret))).flatMap(([, text]) =>
          text
            .split('\n')
            .map((l) => l.trim())
            .filter((l) => l !== ''),
        );
        keysOf.set(secret, secretKeys);
      }
      for (const user of qga.users ?? []) {
        keys[user] ??= [];
        keys[user].push(...secretKeys);
      }
      continue;
    }
    const up = cred.userPassword;
    if (up?.propagationMethod?.qemuGuestAgent && up.source?.secret?.secretName) {
      for (const [user, text] of await secretFiles(secretDir(up.source.secret.secretName))) {
        const password = text.trim();
        if (password) passwords[user] = password;
      }
    }
  }
  return { keys, passwords };
}

/** One VMI's guest-agent credential sync. */
export class AgentCredentials {
  private vmi: VirtualMachineInstance | undefined;
  /** What was last applied successfully (JSON), so unchanged Secrets cost no agent calls. */
  private applied: string | undefined;
  private appliedAt = 0;
  private result: LauncherAccessCredential | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly o: AgentCredentialsOptions) {}

  /** The VMI whose credentials to apply (each SyncVirtualMachine). */
  setVmi(vmi: VirtualMachineInstance): void {
    this.vmi = vmi;
  }

  /** The last result; undefined while the VMI has no agent credentials or none was tried. */
  get report(): LauncherAccessCredential | undefined {
    return this.result;
  }

  /** Applies the credentials when the agent is connected and they changed (one run at a time). */
  sync(connected: boolean): Promise<void> {
    this.running ??= this.syncOnce(connected).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private set(next: LauncherAccessCredential): void {
    const changed = next.succeeded !== this.result?.succeeded || next.message !== this.result?.message;
    this.result = next;
    if (changed) this.o.onChange();
  }

  private async syncOnce(connected: boolean): Promise<void> {
    const vmi = this.vmi;
    if (!hasAgentCredentials(vmi) || !vmi) return;
    const agent = this.o.driver()?.guestAgent;
    if (!connected || !agent?.setAuthorizedKeys || !agent.setUserPassword) {
      // A guest that reconnects (rebooted, agent restarted) gets everything again.
      this.applied = undefined;
      if (!this.result?.succeeded) this.set({ succeeded: false, message: 'Guest agent is offline' });
      return;
    }
    let desired: DesiredCredentials;
    try {
      desired = await readDesiredCredentials(vmi, this.o.secretDir);
    } catch (e) {
      this.applied = undefined;
      this.set({ succeeded: false, message: (e as Error).message });
      return;
    }
    const key = JSON.stringify(desired);
    const due = Date.now() - this.appliedAt >= (this.o.resyncMs ?? 5 * 60_000);
    if (key === this.applied && !due) return;
    let failure: string | undefined;
    for (const [user, keys] of Object.entries(desired.keys)) {
      try {
        const { legacy } = await agent.setAuthorizedKeys(this.o.ref, user, keys);
        if (legacy)
          this.o.log?.(
            `set the SSH keys of user ${user} with the deprecated guest-file path (qemu-ga older than 5.2)`,
          );
      } catch (e) {
        failure = `Error encountered writing ssh pub key access credentials for user [${user}]: ${(e as Error).message}`;
      }
    }
    for (const [user, password] of Object.entries(desired.passwords)) {
      try {
        await agent.setUserPassword(this.o.ref, user, password);
      } catch (e) {
        failure = `Error encountered setting password for user [${user}]: ${(e as Error).message}`;
      }
    }
    if (failure) {
      this.o.log?.(failure);
      this.applied = undefined;
      this.set({ succeeded: false, message: failure });
      return;
    }
    this.applied = key;
    this.appliedAt = Date.now();
    this.set({ succeeded: true, message: '' });
  }
}
