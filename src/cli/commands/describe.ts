/**
 * `kubevirt-ts describe vm|vmi NAME`: kubectl-like description: identity, labels and
 * annotations, spec and status as YAML, and the object's Events.
 */
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { EventType } from '../../controllers/runtime/resources';
import type { KubeObject } from '../../controllers/runtime/types';
import { printable } from '../local/progress';
import { age, resolveKind, table } from './get';
import { type TargetOptions, withTarget, withTargetOptions } from './virtctl/target';

interface EventObj extends KubeObject {
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: string;
  eventTime?: string;
  source?: { component?: string };
  reportingComponent?: string;
  involvedObject?: { uid?: string; name?: string; kind?: string };
}

function indent(text: string, by = 2): string {
  return text
    .trimEnd()
    .split('\n')
    .map((l) => ' '.repeat(by) + l)
    .join('\n');
}

function mapLines(m: Record<string, string> | undefined): string {
  const e = Object.entries(m ?? {});
  if (e.length === 0) return '<none>';
  return e.map(([k, v], i) => `${i ? ' '.repeat(13) : ''}${printable(k)}=${printable(v)}`).join('\n');
}

/** The description text of `obj` with its `events`. */
export function describeText(obj: KubeObject, events: EventObj[], now = Date.now()): string {
  const o = obj as KubeObject & { spec?: unknown; status?: unknown };
  const lines = [
    `Name:        ${printable(o.metadata?.name ?? '')}`,
    `Namespace:   ${printable(o.metadata?.namespace ?? '')}`,
    `Labels:      ${mapLines(o.metadata?.labels)}`,
    `Annotations: ${mapLines(o.metadata?.annotations)}`,
    `API Version: ${printable(String(o.apiVersion ?? 'kubevirt.io/v1'))}`,
    `Kind:        ${printable(String(o.kind ?? ''))}`,
    `Created:     ${printable(String(o.metadata?.creationTimestamp ?? ''))}`,
    'Spec:',
    indent(stringify(o.spec ?? {})),
    'Status:',
    indent(stringify(o.status ?? {})),
  ];
  if (events.length === 0) lines.push('Events:       <none>');
  else {
    lines.push('Events:');
    const rows = [
      ['Type', 'Reason', 'Age', 'From', 'Message'],
      ...events.map((e) => [
        printable(e.type ?? ''),
        printable(e.reason ?? ''),
        age(e.lastTimestamp ?? e.eventTime ?? (e.metadata?.creationTimestamp as string | undefined), now),
        printable(e.source?.component ?? e.reportingComponent ?? ''),
        printable(e.message ?? ''),
      ]),
    ];
    lines.push(indent(table(rows)));
  }
  return `${lines.join('\n')}\n`;
}

export function registerDescribeCommand(program: Command): void {
  withTargetOptions(
    program
      .command('describe')
      .description(
        'describe a VirtualMachine, VirtualMachineInstance or another KubeVirt object (kubectl-like)',
      )
      .argument('<type>', 'vm, vmi, vmpool, vminstancetype, vmpref, ...')
      .argument('<name>'),
  ).action((typeArg: string, name: string, o: TargetOptions) => {
    const { type } = resolveKind(typeArg);
    return withTarget(o, async (t) => {
      const obj = await t.client.get<KubeObject>(type, name, type.namespaced ? t.namespace : undefined);
      const events = await t.client
        .list<EventObj>(EventType, { namespace: t.namespace })
        .then((l) => l.items.filter((e) => e.involvedObject?.uid === obj.metadata?.uid))
        .catch(() => []);
      process.stdout.write(describeText(obj, events));
    });
  });
}
