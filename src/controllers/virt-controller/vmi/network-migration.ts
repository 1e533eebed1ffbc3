/**
 * Whether a running VMI's launcher pod must be replaced for its secondary networks
 * (upstream's pkg/network/migration Evaluator, behind the MigrationRequired condition):
 * the VMI's spec asks for a multus interface its pod was not created with (a hotplugged
 * NIC), for another NetworkAttachmentDefinition on one it has, or no longer asks for one
 * the pod has (an unplugged NIC) once the domain let go of it (no status entry for it).
 * The workload updater then migrates the VMI to a pod rendered from its spec.
 *
 * Deviation from upstream: upstream first waits 15 s (`AutoMigrationPending`) for a dynamic
 * networks controller to plug the pod's interface after it patched the pod's annotation;
 * kubevirt-ts never patches a running pod's networks annotation (Multus here has no such
 * controller), so nothing could plug it and the condition is True at once.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import {
  isSecondaryMultus,
  MULTUS_NETWORKS_ANNOTATION,
  nadNamespacedName,
  parseNetworksAnnotation,
  podInterfaceName,
} from '../../common/multus';
import type { Pod } from '../../common/pod';

/** Why `pod` no longer fits `vmi`'s secondary networks, or undefined when it does. */
export function podNetworksOutdated(vmi: VirtualMachineInstance, pod: Pod): string | undefined {
  const namespace = vmi.metadata?.namespace ?? '';
  const annotation = pod.metadata?.annotations?.[MULTUS_NETWORKS_ANNOTATION];
  let attached: { name: string; namespace: string; interface: string }[] = [];
  try {
    attached = annotation ? parseNetworksAnnotation(annotation, pod.metadata?.namespace ?? namespace) : [];
  } catch {
    return undefined; // not a pod we rendered; nothing to compare
  }
  const inPod = new Map(attached.map((a) => [a.interface, a]));
  const ifaces = new Map((vmi.spec.domain.devices.interfaces ?? []).map((i) => [i.name, i]));
  const wanted = new Set<string>();
  for (const network of (vmi.spec.networks ?? []).filter(isSecondaryMultus)) {
    const iface = ifaces.get(network.name);
    if (!iface || iface.state === 'absent' || iface.sriov) continue;
    const podIf = podInterfaceName(network.name);
    wanted.add(podIf);
    const nad = nadNamespacedName(namespace, network.multus?.networkName ?? '');
    const has = inPod.get(podIf);
    if (!has) return `the launcher pod has no interface for network ${network.name}`;
    if (has.name !== nad.name || has.namespace !== nad.namespace)
      return `network ${network.name} names ${nad.namespace}/${nad.name}, the launcher pod has ${has.namespace}/${has.name}`;
  }
  // An unplugged interface: once the domain let go of it (its status entry is gone).
  const byPodIf = new Map((vmi.spec.networks ?? []).map((n) => [podInterfaceName(n.name), n.name]));
  const inDomain = new Set(
    (vmi.status?.interfaces ?? []).flatMap((s) => [s.podInterfaceName, s.name && podInterfaceName(s.name)]),
  );
  for (const podIf of inPod.keys()) {
    if (wanted.has(podIf) || inDomain.has(podIf)) continue;
    return `the launcher pod still has the interface of unplugged network ${byPodIf.get(podIf) ?? podIf}`;
  }
  return undefined;
}
