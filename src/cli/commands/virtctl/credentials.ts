/**
 * `virtctl credentials add-ssh-key|remove-ssh-key|set-password VM`, with upstream's flags
 * (pkg/virtctl/credentials): they change the Secrets the VM's accessCredentials name
 * (./credentials-secrets.ts), on a cluster through its API and in local mode through the
 * local store; the VM's launcher then applies the Secret through the guest agent.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { addSshKey, removeSshKey, setPassword } from './credentials-secrets';
import { type TargetOptions, withTarget, withTargetOptions } from './target';

interface SshFlags extends TargetOptions {
  user: string;
  secret?: string;
  file?: string;
  value?: string;
  force?: boolean;
}

/** The key from `--value` or `--file` (upstream GetSSHKey), trimmed. */
export async function sshKeyOf(o: { file?: string; value?: string }): Promise<string> {
  if (o.file !== undefined && o.value !== undefined)
    throw new Error(
      'if any flags in the group [file value] are set none of the others can be; [file value] were all set',
    );
  if (o.value) return o.value.trim();
  if (!o.file) throw new Error('one of --file, or --value must be specified');
  return (await readFile(o.file, 'utf8')).trim();
}

function sshCommand(parent: Command, name: string, description: string): Command {
  return withTargetOptions(
    parent
      .command(name)
      .description(description)
      .argument('<vm>')
      .requiredOption('-u, --user <user>', 'Name of the user.')
      .option('--secret <name>', 'Name of the secret with SSH keys.')
      .option('-f, --file <path>', 'Path to the SSH public key file.')
      .option('--value <key>', 'Literal value of the SSH public key.')
      .option('--force', "Force update of secret, even if it's not owned by the VM."),
  );
}

/** Registers `credentials` and its verbs. */
export function registerCredentialsCommands(program: Command): void {
  const creds = program.command('credentials').description('Manipulate credentials on a virtual machine.');
  sshCommand(creds, 'add-ssh-key', 'Add credentials to a virtual machine.')
    .option(
      '--create-secret',
      'Create a new secret for the SSH key. The new key will not be added to a running VM. Use --force to add a new secret even if the VM is running.',
    )
    .option(
      '--update-secret',
      'Add the SSH key to an existing secret. Use --force option, if the secret does not have owner reference pointing to the VM.',
    )
    .action((vm: string, o: SshFlags & { createSecret?: boolean; updateSecret?: boolean }) =>
      withTarget(o, async (t) => {
        if (o.createSecret && o.updateSecret)
          throw new Error(
            'if any flags in the group [create-secret update-secret] are set none of the others can be; [create-secret update-secret] were all set',
          );
        const key = await sshKeyOf(o);
        process.stdout.write(`${await addSshKey(t, vm, { ...o, key })}\n`);
      }),
    );
  sshCommand(creds, 'remove-ssh-key', 'Remove credentials from a virtual machine.').action(
    (vm: string, o: SshFlags) =>
      withTarget(o, async (t) => {
        const key = await sshKeyOf(o);
        const msg = await removeSshKey(t, vm, { ...o, key });
        if (msg) process.stdout.write(`${msg}\n`);
      }),
  );
  withTargetOptions(
    creds
      .command('set-password')
      .description('Set password for a user')
      .argument('<vm>')
      .requiredOption('-u, --user <user>', 'Name of the user.')
      .option('--secret <name>', 'Name of the secret with SSH keys.')
      .requiredOption('-p, --password <password>', 'Password for the user')
      .option('--force', "Force update of secret, even if it's not owned by the VM."),
  ).action(
    (vm: string, o: TargetOptions & { user: string; password: string; secret?: string; force?: boolean }) =>
      withTarget(o, async (t) => {
        process.stdout.write(`${await setPassword(t, vm, o)}\n`);
      }),
  );
}
