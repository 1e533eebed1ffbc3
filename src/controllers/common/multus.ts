/**
 * Secondary (multus) networks as upstream names and requests them
 * (pkg/network/namescheme, pkg/network/multus): each non-default multus network gets the
 * pod interface `pod<first 11 hex digits of sha256(network name)>`, the launcher pod asks
 * for them in its `k8s.v1.cni.cncf.io/networks` annotation (a JSON list of network
 * selection elements: `name`, `namespace`, `mac`, `interface`), and a `networkName` of
 * `ns/name` names a NetworkAttachmentDefinition in another namespace. The in-pod names
 * follow upstream's pkg/network/link: bridge `k6t-<hash>`, tap `tap<hash>`, and the pod
 * interface renamed `<hash>-nic` when the bridge binding takes it.
 */
import { createHash } from 'node:crypto';
import type { Interface, Network, VirtualMachineInstance } from '../../api/generated/types';

/** The pod annotation Multus reads (upstream's NetworkAttachmentAnnot). */
export const MULTUS_NETWORKS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks';

/** One element of the networks annotation, in Multus's JSON field order. */
export interface NetworkSelectionElement {
  name: string;
  namespace?: string;
  mac?: string;
  interface?: string;
}

/** A network that is multus and not the default one (upstream's IsSecondaryMultusNetwork). */
export function isSecondaryMultus(n: Network): boolean {
  return n.multus !== undefined && n.multus !== null && n.multus.default !== true;
}

/** The pod interface of a secondary network: `pod` + 11 hex digits (upstream's GenerateHashedInterfaceName). */
export function podInterfaceName(networkName: string): string {
  return `pod${createHash('sha256').update(networkName).digest('hex').slice(0, 11)}`;
}

/** In-pod names of a secondary network's bridge binding (upstream's link.Generate*Name). */
export function secondaryLinkNames(networkName: string): {
  podIf: string;
  bridge: string;
  tap: string;
  podPort: string;
} {
  const podIf = podInterfaceName(networkName);
  const hash = podIf.slice(3);
  return { podIf, bridge: `k6t-${hash}`, tap: `tap${hash}`, podPort: `${hash}-nic` };
}

/** The NetworkAttachmentDefinition a `networkName` names (`ns/name`, else in the VMI's namespace). */
export function nadNamespacedName(
  namespace: string,
  networkName: string,
): { namespace: string; name: string } {
  const i = networkName.indexOf('/');
  return i >= 0
    ? { namespace: networkName.slice(0, i), name: networkName.slice(i + 1) }
    : { namespace, name: networkName };
}

/** The VMI's secondary multus networks with the interface bound to each (if any) and its index. */
export function secondaryNetworks(
  vmi: VirtualMachineInstance,
): { network: Network; iface?: Interface; index: number }[] {
  const ifaces = vmi.spec.domain.devices.interfaces ?? [];
  return (vmi.spec.networks ?? []).filter(isSecondaryMultus).map((network) => {
    const index = ifaces.findIndex((i) => i.name === network.name);
    return { network, ...(index >= 0 ? { iface: ifaces[index] } : {}), index };
  });
}

/**
 * The launcher pod's `k8s.v1.cni.cncf.io/networks` value (upstream's GenerateCNIAnnotation
 * for core bindings), or undefined when the VMI has no secondary network. Networks whose
 * interface is being unplugged (`state: absent`) are left out, as upstream's annotation
 * generator leaves them: a new pod (a migration's target, a restart) drops them.
 */
export function multusNetworksAnnotation(vmi: VirtualMachineInstance): string | undefined {
  const namespace = vmi.metadata?.namespace ?? '';
  const wanted = secondaryNetworks(vmi).filter(({ iface }) => iface?.state !== 'absent');
  const list: NetworkSelectionElement[] = wanted.map(({ network, iface }) => {
    const nad = nadNamespacedName(namespace, network.multus?.networkName ?? '');
    return {
      name: nad.name,
      namespace: nad.namespace,
      ...(iface?.macAddress ? { mac: iface.macAddress } : {}),
      interface: podInterfaceName(network.name),
    };
  });
  return list.length ? JSON.stringify(list) : undefined;
}

/** One requested attachment, with namespace and interface filled in. */
export interface AttachmentRequest {
  name: string;
  namespace: string;
  interface: string;
  mac?: string;
}

/**
 * Reads a pod's networks annotation (as Multus does: a JSON list, or the short form
 * `name`, `ns/name`, `name@iface`, comma separated); interfaces default to `net1`, `net2`...
 * Throws with the annotation's name on what it cannot read.
 */
export function parseNetworksAnnotation(value: string, podNamespace: string): AttachmentRequest[] {
  let list: NetworkSelectionElement[];
  const text = value.trim();
  if (text.startsWith('[')) {
    try {
      list = JSON.parse(text) as NetworkSelectionElement[];
    } catch (e) {
      throw new Error(`annotation ${MULTUS_NETWORKS_ANNOTATION}: not JSON: ${(e as Error).message}`);
    }
    if (
      !Array.isArray(list) ||
      list.some((e) => typeof e !== 'object' || e === null || typeof e.name !== 'string')
    )
      throw new Error(`annotation ${MULTUS_NETWORKS_ANNOTATION}: every element needs a name`);
  } else {
    list = text
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .map((s) => {
        const [ref, iface] = s.split('@');
        const nad = nadNamespacedName(podNamespace, ref);
        return { ...nad, ...(iface ? { interface: iface } : {}) };
      });
  }
  return list.map((e, i) => ({
    name: e.name,
    namespace: e.namespace || podNamespace,
    interface: e.interface || `net${i + 1}`,
    ...(e.mac ? { mac: e.mac } : {}),
  }));
}
