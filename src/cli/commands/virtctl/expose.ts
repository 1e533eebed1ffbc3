/**
 * `virtctl expose (vm|vmi|vmirs) NAME --name SVC --port N`: a Service selecting the
 * VM's launcher pods, as upstream's virtctl expose. The selector is the VMI's labels (a
 * VM's template labels, a replica set's matchLabels): the launcher pod carries the VMI's
 * labels, so the Service's endpoints are the launcher pods, whose IP carries the guest's
 * traffic (masquerade forwards it, the bridge binding gives the guest that IP).
 */
import type { Command } from 'commander';
import {
  ServiceType,
  VirtualMachineInstanceReplicaSetType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../../controllers/runtime/resources';
import type { KubeObject } from '../../../controllers/runtime/types';
import { printable } from '../../local/progress';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

/** The flags of `expose` (upstream's names). */
export interface ExposeFlags {
  name?: string;
  port?: string;
  targetPort?: string;
  type?: string;
  protocol?: string;
  portName?: string;
  clusterIp?: string;
  externalIp?: string;
  loadBalancerIp?: string;
}

const KINDS: Record<string, 'vm' | 'vmi' | 'vmirs'> = {
  vm: 'vm',
  virtualmachine: 'vm',
  vmi: 'vmi',
  virtualmachineinstance: 'vmi',
  vmirs: 'vmirs',
  virtualmachineinstancereplicaset: 'vmirs',
};
const TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer'];
const DNS1035 = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

function port(text: string | undefined, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 65535)
    throw new Error(`${flag}: ${JSON.stringify(text)} is not a port (1-65535)`);
  return n;
}

/** The Service for `selector` (the object's labels) and the flags; throws naming the flag. */
export function exposeService(
  namespace: string,
  selector: Record<string, string>,
  f: ExposeFlags,
): KubeObject & { spec: Record<string, unknown> } {
  if (!f.name) throw new Error('--name: the service name is required');
  if (!DNS1035.test(f.name))
    throw new Error(`--name: ${JSON.stringify(f.name)} is not a valid service name (DNS-1035 label)`);
  const type = f.type ?? 'ClusterIP';
  if (!TYPES.includes(type))
    throw new Error(`--type: ${JSON.stringify(type)} is not one of ${TYPES.join(', ')}`);
  const protocol = (f.protocol ?? 'TCP').toUpperCase();
  if (!['TCP', 'UDP', 'SCTP'].includes(protocol))
    throw new Error(`--protocol: ${JSON.stringify(f.protocol)} is not TCP, UDP or SCTP`);
  const p = port(f.port, '--port');
  let targetPort: number | string = p;
  if (f.targetPort !== undefined)
    targetPort = /^\d+$/.test(f.targetPort) ? port(f.targetPort, '--target-port') : f.targetPort;
  if (typeof targetPort === 'string' && !/^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$/.test(targetPort))
    throw new Error(`--target-port: ${JSON.stringify(targetPort)} is not a port number or name`);
  if (f.portName !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(f.portName))
    throw new Error(`--port-name: ${JSON.stringify(f.portName)} is not a valid port name`);
  const spec: Record<string, unknown> = {
    ports: [{ ...(f.portName ? { name: f.portName } : {}), protocol, port: p, targetPort }],
    selector,
    type,
  };
  if (f.clusterIp) spec.clusterIP = f.clusterIp;
  if (f.externalIp) spec.externalIPs = [f.externalIp];
  if (f.loadBalancerIp) spec.loadBalancerIP = f.loadBalancerIp;
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: f.name, namespace }, spec };
}

/** The fields of a VM, VMI or replica set the selector comes from. */
interface Exposable {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: {
    template?: { metadata?: { labels?: Record<string, string> } };
    selector?: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  };
}

/** The selector upstream exposes for a VM, VMI or replica set; throws as upstream does. */
export function exposeSelector(kind: 'vm' | 'vmi' | 'vmirs', obj: Exposable): Record<string, string> {
  const what = {
    vm: 'VirtualMachine',
    vmi: 'VirtualMachineInstance',
    vmirs: 'VirtualMachineInstanceReplicaSet',
  }[kind];
  let labels: Record<string, string> | undefined;
  if (kind === 'vmi') labels = obj.metadata?.labels;
  else if (kind === 'vm') labels = obj.spec?.template?.metadata?.labels;
  else {
    if ((obj.spec?.selector?.matchExpressions ?? []).length > 0)
      throw new Error(`cannot expose ${what} with match expressions`);
    labels = obj.spec?.selector?.matchLabels;
  }
  if (!labels || Object.keys(labels).length === 0)
    throw new Error(`cannot expose ${what} without any label: ${obj.metadata?.name}`);
  return { ...labels };
}

/** Creates the Service exposing `kindArg name` in the target's namespace; returns it. */
export async function exposeObject(
  t: Target,
  kindArg: string,
  name: string,
  f: ExposeFlags,
): Promise<KubeObject> {
  const kind = KINDS[kindArg.toLowerCase()];
  if (!kind) throw new Error(`unsupported resource type ${JSON.stringify(kindArg)}: vm, vmi or vmirs`);
  const type = {
    vm: VirtualMachineType,
    vmi: VirtualMachineInstanceType,
    vmirs: VirtualMachineInstanceReplicaSetType,
  }[kind];
  const obj = await t.client.get<KubeObject>(type, name, t.namespace);
  return t.client.create(ServiceType, exposeService(t.namespace, exposeSelector(kind, obj as Exposable), f));
}

/** Registers `expose`. */
export function registerExposeCommand(program: Command): void {
  withTargetOptions(
    program
      .command('expose')
      .description('expose a VM, VMI or VMI replica set as a Service selecting its launcher pods')
      .argument('<kind>', 'vm, vmi or vmirs')
      .argument('<name>')
      .requiredOption('--name <service>', 'name of the Service to create')
      .requiredOption('--port <port>', 'port the Service serves')
      .option('--target-port <port>', 'port (or port name) on the VM (default: --port)')
      .option('--type <type>', 'ClusterIP, NodePort or LoadBalancer', 'ClusterIP')
      .option('--protocol <protocol>', 'TCP, UDP or SCTP', 'TCP')
      .option('--port-name <name>', 'name of the Service port')
      .option('--cluster-ip <ip>', 'the Service cluster IP')
      .option('--external-ip <ip>', 'an external IP of the Service')
      .option('--load-balancer-ip <ip>', 'the load balancer IP (LoadBalancer)'),
  ).action((kindArg: string, name: string, o: TargetOptions & ExposeFlags) =>
    withTarget(o, async (t) => {
      await exposeObject(t, kindArg, name, o);
      process.stdout.write(
        `Service ${printable(o.name ?? '')} successfully exposed for ${kindArg} ${printable(name)}\n`,
      );
    }),
  );
}
