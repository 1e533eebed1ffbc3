/**
 * Secondary networks of a local pod, what Multus does on a cluster: the pod's
 * `k8s.v1.cni.cncf.io/networks` annotation names NetworkAttachmentDefinitions, each one's
 * `spec.config` is a CNI configuration (a single-plugin `.conf`, or a `.conflist` with one
 * plugin), and the runtime runs that plugin with the requested interface name in the pod's
 * namespace. A definition that does not exist, or a configuration this runtime cannot run,
 * fails the sandbox with the definition's name (the pod stays Pending and is retried).
 * A requested MAC is not passed to the plugin (the bridge binding gives the guest the
 * spec's MAC itself).
 */
import { MULTUS_NETWORKS_ANNOTATION, parseNetworksAnnotation } from '../../common/multus';
import type { Pod } from '../../common/pod';
import { NotFoundError } from '../../runtime/errors';
import { NetworkAttachmentDefinitionType } from '../../runtime/resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';
import type { CniConfig } from './cni';

/** One network to attach: the interface in the pod and the plugin configuration. */
export interface SecondaryAttachment {
  /** `namespace/name` of the NetworkAttachmentDefinition. */
  network: string;
  ifName: string;
  config: CniConfig;
}

const IFNAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$/;

/** The configuration to run from a definition's `spec.config`, or an error naming it. */
export function cniConfigOf(network: string, configText: unknown): CniConfig {
  const where = `NetworkAttachmentDefinition ${network}: spec.config`;
  if (typeof configText !== 'string' || configText.trim() === '')
    throw new Error(`${where}: no CNI configuration (this runtime has no default delegate)`);
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(configText) as Record<string, unknown>;
  } catch (e) {
    throw new Error(`${where}: not JSON: ${(e as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new Error(`${where}: not a JSON object`);
  let conf: Record<string, unknown> = raw;
  if (Array.isArray(raw.plugins)) {
    // A conflist: chaining would hand each plugin the previous result; one plugin is what is run here.
    if (raw.plugins.length !== 1)
      throw new Error(
        `${where}: plugins: ${raw.plugins.length} plugins; this runtime runs a list of exactly one`,
      );
    conf = { ...(raw.plugins[0] as Record<string, unknown>) };
    conf.cniVersion = raw.cniVersion;
    conf.name = raw.name;
  }
  if (typeof conf.type !== 'string') throw new Error(`${where}: type: a CNI plugin name is required`);
  return {
    ...conf,
    cniVersion: typeof conf.cniVersion === 'string' ? conf.cniVersion : '0.3.1',
    name: typeof conf.name === 'string' ? conf.name : network,
    type: conf.type,
  };
}

/** The attachments the pod's annotation asks for, each definition read from the API. */
export async function secondaryAttachments(pod: Pod, client: ObjectClient): Promise<SecondaryAttachment[]> {
  const value = pod.metadata?.annotations?.[MULTUS_NETWORKS_ANNOTATION];
  if (!value) return [];
  const out: SecondaryAttachment[] = [];
  const seen = new Set<string>(['eth0', 'lo']);
  for (const req of parseNetworksAnnotation(value, pod.metadata?.namespace ?? 'default')) {
    const network = `${req.namespace}/${req.name}`;
    if (!IFNAME.test(req.interface) || seen.has(req.interface)) {
      throw new Error(
        `annotation ${MULTUS_NETWORKS_ANNOTATION}: network ${network}: interface ${JSON.stringify(req.interface)} is not a free interface name`,
      );
    }
    seen.add(req.interface);
    let nad: KubeObject & { spec?: { config?: unknown } };
    try {
      nad = await client.get(NetworkAttachmentDefinitionType, req.name, req.namespace);
    } catch (err) {
      if (err instanceof NotFoundError)
        throw new Error(`failed to locate network attachment definition ${network}`);
      throw err;
    }
    out.push({ network, ifName: req.interface, config: cniConfigOf(network, nad.spec?.config) });
  }
  return out;
}
