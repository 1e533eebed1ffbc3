/**
 * The `objectgraph` subresource of VMs and VMIs (upstream's pkg/virt-api/rest/objectgraph.go,
 * feature gate ObjectGraph): the objects a VM or VMI depends on as a tree of
 * ObjectGraphNodes (its VMI and launcher pod, instance type, preference and their
 * revisions, access-credential secrets, volume sources, Multus networks), each labelled
 * `kubevirt.io/dependency-type` (compute, storage, config, network); the request body's
 * ObjectGraphOptions drop optional nodes and filter by label selector.
 */

import type { ClusterConfig } from '../../api/config/cluster-config';
import { FeatureGate } from '../../api/config/feature-gates';
import type {
  AccessCredential,
  ObjectGraphNode,
  ObjectGraphOptions,
  VirtualMachine,
  VirtualMachineInstanceSpec,
} from '../../api/generated/types';
import { PodType, VirtualMachineType } from '../runtime/resources';
import {
  formatLabelSelector,
  type LabelSelector,
  type LabelSelectorSpec,
  parseLabelSelector,
} from '../runtime/selectors';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { HttpError, notFound } from './http-error';
import { fetchVmi, type Vmi } from './vmi-subresources';

/** Node label naming what kind of dependency a node is. */
export const DEPENDENCY_LABEL = 'kubevirt.io/dependency-type';

const GROUP_KINDS: Record<string, [group: string, kind: string]> = {
  virtualmachines: ['kubevirt.io', 'VirtualMachine'],
  virtualmachineinstances: ['kubevirt.io', 'VirtualMachineInstance'],
  virtualmachineinstancetypes: ['instancetype.kubevirt.io', 'VirtualMachineInstancetype'],
  virtualmachineclusterinstancetypes: ['instancetype.kubevirt.io', 'VirtualMachineClusterInstancetype'],
  virtualmachinepreferences: ['instancetype.kubevirt.io', 'VirtualMachinePreference'],
  virtualmachineclusterpreferences: ['instancetype.kubevirt.io', 'VirtualMachineClusterPreference'],
  datavolumes: ['cdi.kubevirt.io', 'DataVolume'],
  controllerrevisions: ['apps', 'ControllerRevision'],
  configmaps: ['', 'ConfigMap'],
  persistentvolumeclaims: ['', 'PersistentVolumeClaim'],
  serviceaccounts: ['', 'ServiceAccount'],
  secrets: ['', 'Secret'],
  pods: ['', 'Pod'],
  networkattachmentdefinitions: ['k8s.cni.cncf.io', 'NetworkAttachmentDefinition'],
};

function dependencyType(resource: string): string {
  if (resource === 'datavolumes' || resource === 'persistentvolumeclaims') return 'storage';
  if (resource === 'networkattachmentdefinitions') return 'network';
  if (['pods', 'virtualmachines', 'virtualmachineinstances'].includes(resource)) return 'compute';
  return 'config';
}

function node(
  name: string,
  namespace: string,
  resource: keyof typeof GROUP_KINDS,
  children: ObjectGraphNode[] = [],
  optional = false,
): ObjectGraphNode {
  const [apiGroup, kind] = GROUP_KINDS[resource] ?? ['', ''];
  return {
    objectReference: { name, namespace, apiGroup, kind },
    labels: { [DEPENDENCY_LABEL]: dependencyType(resource) },
    ...(children.length > 0 ? { children } : {}),
    ...(optional ? { optional } : {}),
  };
}

/** The launcher pod of VMI `name`: owned by it, or annotated with its domain. */
async function launcherPod(client: ObjectClient, ns: string, name: string): Promise<ObjectGraphNode[]> {
  const pods = await client.list<KubeObject>(PodType, {
    namespace: ns,
    labelSelector: 'kubevirt.io=virt-launcher',
  });
  for (const p of pods.items) {
    const owned = (p.metadata?.ownerReferences ?? []).some(
      (r) => r.kind === 'VirtualMachineInstance' && r.name === name,
    );
    if (owned || p.metadata?.annotations?.['kubevirt.io/domain'] === name) {
      return [node(p.metadata?.name ?? '', ns, 'pods')];
    }
  }
  return [];
}

function accessCredentials(acs: AccessCredential[] | undefined, ns: string): ObjectGraphNode[] {
  const out: ObjectGraphNode[] = [];
  for (const ac of acs ?? []) {
    const secret = ac.sshPublicKey?.source?.secret?.secretName ?? ac.userPassword?.source?.secret?.secretName;
    if (secret) out.push(node(secret, ns, 'secrets'));
  }
  return out;
}

function volumes(spec: VirtualMachineInstanceSpec | undefined, ns: string): ObjectGraphNode[] {
  const out: ObjectGraphNode[] = [];
  for (const v of spec?.volumes ?? []) {
    if (v.dataVolume?.name) {
      const n = v.dataVolume.name;
      out.push(node(n, ns, 'datavolumes', [node(n, ns, 'persistentvolumeclaims')]));
    } else if (v.persistentVolumeClaim?.claimName) {
      out.push(node(v.persistentVolumeClaim.claimName, ns, 'persistentvolumeclaims'));
    } else if (v.configMap?.name) out.push(node(v.configMap.name, ns, 'configmaps'));
    else if (v.secret?.secretName) out.push(node(v.secret.secretName, ns, 'secrets'));
    else if (v.serviceAccount?.serviceAccountName) {
      out.push(node(v.serviceAccount.serviceAccountName, ns, 'serviceaccounts'));
    } else {
      const ci = v.cloudInitNoCloud ?? v.cloudInitConfigDrive;
      // upstream UserDataSecretRef is `secretRef` in JSON.
      for (const ref of [ci?.secretRef, ci?.networkDataSecretRef]) {
        if (ref?.name) out.push(node(ref.name, ns, 'secrets'));
      }
    }
  }
  return out;
}

function networks(spec: VirtualMachineInstanceSpec | undefined, ns: string): ObjectGraphNode[] {
  const out: ObjectGraphNode[] = [];
  for (const n of spec?.networks ?? []) {
    const full = n.multus?.networkName;
    if (!full) continue;
    const parts = full.split('/');
    const [nadNs, name] = parts.length === 2 ? (parts as [string, string]) : [ns, full];
    out.push(node(name, nadNs, 'networkattachmentdefinitions', [], true));
  }
  return out;
}

type Matcher = { kind?: string; name?: string; revisionName?: string };
type StatusRef = { controllerRevisionRef?: { name?: string } };

function matcherNodes(m: Matcher | undefined, ref: StatusRef | undefined, ns: string): ObjectGraphNode[] {
  if (!m) return [];
  const out: ObjectGraphNode[] = [];
  const resource = `${(m.kind ?? '').toLowerCase()}s`;
  if (resource === 'virtualmachineclusterinstancetypes' || resource === 'virtualmachineclusterpreferences') {
    out.push(node(m.name ?? '', '', resource, [], true));
  } else if (resource === 'virtualmachineinstancetypes' || resource === 'virtualmachinepreferences') {
    out.push(node(m.name ?? '', ns, resource, [], true));
  }
  if (ref?.controllerRevisionRef?.name)
    out.push(node(ref.controllerRevisionRef.name, ns, 'controllerrevisions'));
  if (!ref && m.revisionName) out.push(node(m.revisionName, ns, 'controllerrevisions'));
  return out;
}

interface GraphFilter {
  includeOptional: boolean;
  selector?: LabelSelector;
}

function filter(nodes: ObjectGraphNode[], o: GraphFilter): ObjectGraphNode[] {
  const out: ObjectGraphNode[] = [];
  for (const n of nodes) {
    if (n.optional && !o.includeOptional) continue;
    if (o.selector && !o.selector.matches(n.labels)) continue;
    const children = filter(n.children ?? [], o);
    const { children: _, ...rest } = n;
    out.push(children.length > 0 ? { ...rest, children } : rest);
  }
  return out;
}

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

function parseOptions(body: unknown): GraphFilter {
  if (body === undefined || body === null) return { includeOptional: true };
  if (typeof body !== 'object' || Array.isArray(body))
    throw new HttpError(400, 'objectgraph: the body must be an ObjectGraphOptions object');
  const o = body as ObjectGraphOptions;
  if (o.includeOptionalNodes !== undefined && typeof o.includeOptionalNodes !== 'boolean')
    throw new HttpError(400, 'objectGraphOptions.includeOptionalNodes: must be true or false');
  const includeOptional = o.includeOptionalNodes !== false;
  if (o.labelSelector === undefined) return { includeOptional };
  const ls = o.labelSelector;
  if (typeof ls !== 'object' || ls === null || Array.isArray(ls))
    throw new HttpError(400, 'objectGraphOptions.labelSelector: must be a LabelSelector object');
  (ls.matchExpressions ?? []).forEach((e, i) => {
    if (!OPERATORS.includes(e?.operator))
      throw new HttpError(
        400,
        `objectGraphOptions.labelSelector.matchExpressions[${i}].operator: ${JSON.stringify(e?.operator)} is not one of ${OPERATORS.join(', ')}`,
      );
  });
  try {
    return { includeOptional, selector: parseLabelSelector(formatLabelSelector(ls as LabelSelectorSpec)) };
  } catch (e) {
    throw new HttpError(400, `objectGraphOptions.labelSelector: ${(e as Error).message}`);
  }
}

/** The resources with an objectgraph subresource. */
export type ObjectGraphResource = 'virtualmachines' | 'virtualmachineinstances';

/** `virtualmachines/NAME/objectgraph` or `virtualmachineinstances/NAME/objectgraph`. */
export async function objectGraph(
  client: ObjectClient,
  config: ClusterConfig,
  resource: ObjectGraphResource,
  ns: string,
  name: string,
  body: unknown,
): Promise<ObjectGraphNode> {
  if (!config.isFeatureGateEnabled(FeatureGate.ObjectGraph)) {
    throw new HttpError(400, 'ObjectGraph feature gate not enabled: Unable to return object graph.');
  }
  let children: ObjectGraphNode[];
  if (resource === 'virtualmachines') {
    const vm = await client
      .get<VirtualMachine & KubeObject>(VirtualMachineType, name, ns)
      .catch(() => Promise.reject(notFound('virtualmachine', name)));
    const options = parseOptions(body);
    const spec = vm.spec?.template?.spec;
    children = [];
    if (vm.status?.created) {
      children.push(node(name, ns, 'virtualmachineinstances', await launcherPod(client, ns, name)));
    }
    children.push(
      ...matcherNodes(vm.spec?.instancetype, vm.status?.instancetypeRef, ns),
      ...matcherNodes(vm.spec?.preference, vm.status?.preferenceRef, ns),
      ...accessCredentials(spec?.accessCredentials, ns),
      ...volumes(spec, ns),
      ...networks(spec, ns),
    );
    const root = node(name, ns, 'virtualmachines');
    const kept = filter(children, options);
    return kept.length > 0 ? { ...root, children: kept } : root;
  }
  const vmi: Vmi = await fetchVmi(client, ns, name);
  const options = parseOptions(body);
  children = [
    ...(await launcherPod(client, ns, name)),
    ...accessCredentials(vmi.spec?.accessCredentials, ns),
    ...volumes(vmi.spec, ns),
    ...networks(vmi.spec, ns),
  ];
  const root = node(name, ns, 'virtualmachineinstances');
  const kept = filter(children, options);
  return kept.length > 0 ? { ...root, children: kept } : root;
}
