/**
 * `kubevirt-ts get TYPE [NAME] [-A] [-o wide|yaml|json]`: kubectl-like tables of
 * VirtualMachines and VirtualMachineInstances, from local mode or a cluster
 * (`--kubeconfig`), with kubectl's columns (VM: NAME AGE STATUS READY; VMI: NAME AGE
 * PHASE IP NODENAME READY); the other served KubeVirt kinds (pools, instance types,
 * preferences, ReplicaSets, migrations, KubeVirt) with their CRD printer columns (./get-kinds).
 */
import type { Command } from 'commander';
import { stringify } from 'yaml';
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { VmiResource } from '../../controllers/common/vmi-resource';
import { VirtualMachineType } from '../../controllers/runtime/resources';
import type { KubeObject, ResourceType } from '../../controllers/runtime/types';
import { printable } from '../local/progress';
import { findListedKind, type ListedKind, listedKindNames, listedRows } from './get-kinds';
import { type TargetOptions, withTarget, withTargetOptions } from './virtctl/target';

/** A kind `get` and `describe` accept: VMs and VMIs with their own columns, or another served kind. */
export type ResolvedKind =
  | { type: ResourceType; kind: 'vm' | 'vmi' }
  | { type: ResourceType; kind: 'other'; listed: ListedKind };

/** The kinds `get` and `describe` accept, by every name kubectl accepts for them. */
export function resolveKind(arg: string): ResolvedKind {
  const a = arg.toLowerCase();
  if (['vm', 'vms', 'virtualmachine', 'virtualmachines'].includes(a))
    return { type: VirtualMachineType, kind: 'vm' };
  if (['vmi', 'vmis', 'virtualmachineinstance', 'virtualmachineinstances'].includes(a)) {
    return { type: VmiResource, kind: 'vmi' };
  }
  const listed = findListedKind(a);
  if (listed) return { type: listed.type, kind: 'other', listed };
  throw new Error(
    `resource type ${JSON.stringify(arg)}: expected vms, vmis or one of ${listedKindNames()
      .filter((p) => !['virtualmachines', 'virtualmachineinstances'].includes(p))
      .join(', ')}`,
  );
}

/** kubectl's age format: 45s, 12m, 3h, 5d. */
export function age(timestamp: string | undefined, now = Date.now()): string {
  if (!timestamp) return '<unknown>';
  const s = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.floor(s / 60)}m`;
  if (s < 172800) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

/** Formats rows as kubectl does: columns left-aligned, three spaces apart. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd((widths[i] ?? 0) + 3)))
        .join('')
        .trimEnd(),
    )
    .join('\n');
}

/** The table rows (header first) for VMs or VMIs. */
export function rowsOf(
  kind: 'vm' | 'vmi',
  items: KubeObject[],
  allNamespaces: boolean,
  wide: boolean,
  now = Date.now(),
): string[][] {
  const ns = (o: KubeObject) => (allNamespaces ? [printable(o.metadata?.namespace ?? '')] : []);
  if (kind === 'vm') {
    const header = [...(allNamespaces ? ['NAMESPACE'] : []), 'NAME', 'AGE', 'STATUS', 'READY'];
    return [
      header,
      ...items.map((o) => {
        const vm = o as VirtualMachine & KubeObject;
        return [
          ...ns(o),
          printable(vm.metadata?.name ?? ''),
          age(vm.metadata?.creationTimestamp as string | undefined, now),
          printable(vm.status?.printableStatus ?? 'Stopped'),
          vm.status?.ready ? 'True' : 'False',
        ];
      }),
    ];
  }
  const header = [...(allNamespaces ? ['NAMESPACE'] : []), 'NAME', 'AGE', 'PHASE', 'IP', 'NODENAME', 'READY'];
  if (wide) header.push('LIVE-MIGRATABLE', 'PAUSED');
  return [
    header,
    ...items.map((o) => {
      const vmi = o as VirtualMachineInstance & KubeObject;
      const cond = (t: string) => vmi.status?.conditions?.find((c) => c.type === t)?.status;
      const row = [
        ...ns(o),
        printable(vmi.metadata?.name ?? ''),
        age(vmi.metadata?.creationTimestamp as string | undefined, now),
        printable(vmi.status?.phase ?? ''),
        printable(vmi.status?.interfaces?.[0]?.ipAddress ?? ''),
        printable(vmi.status?.nodeName ?? ''),
        cond('Ready') === 'True' ? 'True' : 'False',
      ];
      if (wide) row.push(cond('LiveMigratable') ?? '', cond('Paused') ?? '');
      return row;
    }),
  ];
}

export function registerGetCommand(program: Command): void {
  withTargetOptions(
    program
      .command('get')
      .description('list VirtualMachines, VirtualMachineInstances or another KubeVirt kind (kubectl-like)')
      .argument('<type>', 'vms, vmis, vmpools, vmirs, vmim, vminstancetypes, vmprefs, ...')
      .argument('[name]')
      .option('-A, --all-namespaces', 'every namespace')
      .option('-o, --output <format>', 'wide, yaml or json'),
  ).action(
    (
      typeArg: string,
      name: string | undefined,
      o: TargetOptions & { allNamespaces?: boolean; output?: string },
    ) => {
      const resolved = resolveKind(typeArg);
      const { type } = resolved;
      if (o.output && !['wide', 'yaml', 'json'].includes(o.output)) {
        throw new Error(`--output ${JSON.stringify(o.output)}: expected wide, yaml or json`);
      }
      return withTarget(o, async (t) => {
        // Cluster-scoped kinds (cluster instance types and preferences) have no namespace.
        const namespace = type.namespaced ? t.namespace : undefined;
        const items = name
          ? [await t.client.get<KubeObject>(type, name, namespace)]
          : (await t.client.list<KubeObject>(type, { namespace: o.allNamespaces ? undefined : namespace }))
              .items;
        if (o.output === 'json' || o.output === 'yaml') {
          const doc = name ? items[0] : { apiVersion: 'v1', kind: 'List', items };
          process.stdout.write(o.output === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : stringify(doc));
          return;
        }
        if (items.length === 0) {
          process.stderr.write(
            `No resources found${o.allNamespaces || !namespace ? '' : ` in ${printable(namespace)} namespace`}.\n`,
          );
          return;
        }
        const all = Boolean(o.allNamespaces);
        const wide = o.output === 'wide';
        const rows =
          resolved.kind === 'other'
            ? listedRows(resolved.listed, items, all, wide, (ts) => age(ts))
            : rowsOf(resolved.kind, items, all, wide);
        process.stdout.write(`${table(rows)}\n`);
      });
    },
  );
}
