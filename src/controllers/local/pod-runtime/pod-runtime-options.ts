/** What a {@link PodRuntime} (pod-runtime.ts) is given: its client, node, directories, commands and network. */
import type { ObjectClient } from '../../runtime/types';
import type { PodNetworkOptions } from './pod-network';

/** A PersistentVolume of a CSI driver, as the node side needs it. */
export interface CsiVolumeSource {
  pvName: string;
  volumeHandle: string;
  driver: string;
  fsType?: string;
  accessMode?: string;
  volumeMode?: string;
  readOnly: boolean;
  /** The pod's fsGroup: the volume's files are given to it (the CSIDriver's fsGroupPolicy File). */
  fsGroup?: number;
}

/** The kubelet's CSI volume plugin: publishes CSI PVs into pod directories (local mode: ../csi/). */
export interface PodCsiVolumes {
  /** Stages and publishes the volume for the pod; returns the directory holding its files. */
  publish(podDir: string, v: CsiVolumeSource): Promise<string>;
  /** Unpublishes every CSI volume of the pod; throws while any is still mounted there. */
  unpublishAll(podDir: string): Promise<void>;
}

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
  /** CSI volumes (claims bound to CSI PVs); without it such claims fail to mount, saying so. */
  csi?: PodCsiVolumes;
  onWrite?: (kind: 'Pod' | 'Node' | 'Lease', name: string) => void;
  log?: (message: string) => void;
}
