/**
 * `virtctl pause|unpause vm|vmi NAME`, `soft-reboot`, `reset`, `freeze`, `unfreeze`,
 * `guestosinfo`, `userlist`, `fslist NAME`, `evacuate-cancel vm|vmi NAME`: calls of
 * the VMI's `subresources.kubevirt.io/v1` subresources (a VM's VMI has the VM's name).
 */
import type { Command } from 'commander';
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { parseGoDuration } from '../../../controllers/common/go-duration';
import { VirtualMachineInstanceType } from '../../../controllers/runtime/resources';
import type { KubeObject } from '../../../controllers/runtime/types';
import { printable } from '../../local/progress';
import { type TargetOptions, withTarget, withTargetOptions } from './target';

function kindArg(kind: string): 'vm' | 'vmi' {
  const k = kind.toLowerCase();
  if (k === 'vm' || k === 'virtualmachine') return 'vm';
  if (k === 'vmi' || k === 'virtualmachineinstance') return 'vmi';
  throw new Error(`${JSON.stringify(kind)}: expected vm or vmi`);
}

/** Registers pause, unpause, soft-reboot, reset, freeze, unfreeze, userlist, fslist, guestosinfo and evacuate-cancel. */
export function registerVmiSubresourceCommands(program: Command): void {
  // upstream's: the VMI's node as the evacuation to cancel, then the VM's or VMI's subresource.
  withTargetOptions(
    program
      .command('evacuate-cancel')
      .description("cancel the evacuation of a VM's or VMI's guest (no further migration for it)")
      .argument('<kind>', 'vm or vmi')
      .argument('<name>')
      .option('--dry-run', 'check the request without changing anything'),
  ).action((kind: string, name: string, o: TargetOptions & { dryRun?: boolean }) => {
    const k = kindArg(kind);
    const what = `${k.toUpperCase()} ${printable(name)}`;
    return withTarget(o, async (t) => {
      if (!t.kubeConfig) throw new Error('evacuate-cancel: local mode has one node and evacuates nothing');
      const vmi = await t.client
        .get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, name, t.namespace)
        .catch((e: Error) => {
          throw new Error(`error retrieving VMI for evacuation cancel for ${what}: ${e.message}`);
        });
      if (!vmi.status?.nodeName) throw new Error(`${what} doesn't report Node name`);
      const body = { evacuationNodeName: vmi.status.nodeName, ...(o.dryRun ? { dryRun: ['All'] } : {}) };
      const resource = k === 'vm' ? 'virtualmachines' : 'virtualmachineinstances';
      await t.subresource('PUT', t.namespace, name, 'evacuate/cancel', body, resource);
      process.stdout.write(
        `${k.toUpperCase()} ${printable(`${t.namespace}/${name}`)} was canceled evacuation\n`,
      );
    });
  });
  for (const verb of ['pause', 'unpause'] as const) {
    withTargetOptions(
      program
        .command(verb)
        .description(`${verb} a VirtualMachine's or VirtualMachineInstance's guest`)
        .argument('<kind>', 'vm or vmi')
        .argument('<name>'),
    ).action((kind: string, name: string, o: TargetOptions) => {
      const k = kindArg(kind);
      return withTarget(o, async (t) => {
        await t.subresource('PUT', t.namespace, name, verb, {});
        process.stdout.write(`${k.toUpperCase()} ${printable(name)} was scheduled to ${verb}\n`);
      });
    });
  }
  withTargetOptions(
    program
      .command('soft-reboot')
      .description('reboot the guest from inside (its agent when connected, else ACPI)')
      .argument('<vmi>'),
  ).action((name: string, o: TargetOptions) =>
    withTarget(o, async (t) => {
      await t.subresource('PUT', t.namespace, name, 'softreboot', {});
      process.stdout.write(`VMI ${printable(name)} was scheduled to soft reboot\n`);
    }),
  );
  withTargetOptions(
    program.command('reset').description('reset the guest (a hard reboot)').argument('<vmi>'),
  ).action((name: string, o: TargetOptions) =>
    withTarget(o, async (t) => {
      await t.subresource('PUT', t.namespace, name, 'reset', {});
      process.stdout.write(`VMI ${printable(name)} was reset\n`);
    }),
  );
  withTargetOptions(
    program
      .command('freeze')
      .description("freeze the guest's filesystems through its agent (for a consistent backup)")
      .argument('<vmi>')
      .option(
        '--unfreeze-timeout <duration>',
        'thaw them again after this long if unfreeze is not called (Go duration; 0s: never)',
        '5m0s',
      ),
  ).action((name: string, o: TargetOptions & { unfreezeTimeout: string }) => {
    // Refuse a bad duration here, before it reaches the cluster.
    const ms = parseGoDuration(o.unfreezeTimeout, '--unfreeze-timeout');
    if (ms < 0) throw new Error(`--unfreeze-timeout: ${o.unfreezeTimeout} is negative`);
    return withTarget(o, async (t) => {
      // upstream's FreezeUnfreezeTimeout body, the duration as Go writes it.
      await t.subresource('PUT', t.namespace, name, 'freeze', { unfreezeTimeout: o.unfreezeTimeout });
      process.stdout.write(`VMI ${printable(name)} was frozen\n`);
    });
  });
  withTargetOptions(
    program.command('unfreeze').description("thaw the guest's filesystems").argument('<vmi>'),
  ).action((name: string, o: TargetOptions) =>
    withTarget(o, async (t) => {
      await t.subresource('PUT', t.namespace, name, 'unfreeze');
      process.stdout.write(`VMI ${printable(name)} was unfrozen\n`);
    }),
  );
  for (const [cmd, sub, what] of [
    ['userlist', 'userlist', 'users logged in to the guest'],
    ['fslist', 'filesystemlist', "the guest's filesystems"],
  ] as const) {
    withTargetOptions(
      program.command(cmd).description(`${what}, from the guest agent (JSON)`).argument('<vmi>'),
    ).action((name: string, o: TargetOptions) =>
      withTarget(o, async (t) => {
        const list = await t.subresource('GET', t.namespace, name, sub);
        process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
      }),
    );
  }
  withTargetOptions(
    program.command('guestosinfo').description("the guest agent's OS information (JSON)").argument('<vmi>'),
  ).action((name: string, o: TargetOptions) =>
    withTarget(o, async (t) => {
      const info = await t.subresource('GET', t.namespace, name, 'guestosinfo');
      process.stdout.write(`${JSON.stringify(info, null, 2)}\n`);
    }),
  );
}
