/** What a {@link PodRuntime} (pod-runtime.ts) is given: its client, node, directories, commands and network. */
import type { ObjectClient } from '../../runtime/types';
import type { PodNetworkOptions } from './pod-network';

/** Options of `PodRuntime` (pod-runtime.ts). */
export interface PodRuntimeOptions {
  client: ObjectClient;
  nodeName: string;
  /** Root of pod directories (kubelet's layout under it). */
  root: string;
  /** Bind unscheduled pods to this node (no scheduler runs). Default false. */
  bindPending?: boolean;
  /**
   * Commands by name: the first word of a container's command is looked up here (default:
   * `kubevirt-ts` -> `node <this package>/dist/cli/kubevirt-ts.js`).
   */
  commands?: Record<string, string[]>;
  /** Environment added to every container (e.g. the image store root, the libvirt URI). */
  env?: Record<string, string>;
  /** Register the Node, keep it Ready and its Lease renewed (default true). */
  manageNode?: boolean;
  /** How often adopted processes are checked for exit, ms (default 500). */
  pollMs?: number;
  /**
   * How often the secret, configMap and downwardAPI volumes of running pods are rewritten
   * from the API, ms (default 10 000; kubelet's sync does it about once a minute), so a
   * changed Secret reaches the pod as it does on a kubelet node.
   */
  volumeSyncMs?: number;
  /**
   * Give every pod (not `hostNetwork`) its own network namespace attached with the CNI
   * bridge plugin (see pod-network.ts), and run its process inside it. Off by default.
   */
  network?: PodNetworkOptions;
  onWrite?: (kind: 'Pod' | 'Node' | 'Lease', name: string) => void;
  log?: (message: string) => void;
}
