/**
 * What a virt-controller is built with: its client, configuration, launcher pod choices,
 * the optional kinds it watches, leader election and the hooks tests and benchmarks use.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import type { InstancetypeObjectCatalog } from '../../api/instancetype/catalog';
import type { EventRecorder } from '../common/controller-ports';
import type { LeaderElectionOptions } from '../runtime/leader-election';
import type { ObjectClient } from '../runtime/types';
import type { ControllerThreads } from './controller-threads';
import type { LauncherPodOptions } from './services/pod-renderer';
import type { VmiFreezer } from './snapshot/source';

/** A write made by a controller, for tests and benchmarks that count them. */
export interface WriteRecord {
  controller: string;
  kind: string;
  verb: 'create' | 'update' | 'patch' | 'delete';
}

/** Options of {@link VirtController}. */
export interface VirtControllerOptions {
  client: ObjectClient;
  /** The cluster configuration (a function to follow KubeVirt CR changes). */
  config?: ClusterConfig | (() => ClusterConfig);
  /** Launcher image and hypervisor choices for launcher pods. */
  launcher: LauncherPodOptions;
  /**
   * Workers of every controller, in place of the per-controller counts (tests and
   * benches); unset: `threads`, else upstream's defaults (controller-threads.ts).
   */
  workers?: number;
  /** Workers per controller group, as upstream's `--<group>-controller-threads` flags set them. */
  threads?: Partial<ControllerThreads>;
  /** Restrict to one namespace (default: all). */
  namespace?: string;
  /** Event recorder (default: core/v1 Events through `client`, component virt-controller). */
  recorder?: EventRecorder;
  /** Instance types and preferences for VMs that reference them (overrides `instancetypes`). */
  catalog?: () => InstancetypeObjectCatalog;
  /**
   * Watch the instancetype.kubevirt.io kinds and expand VMs with them (default false: the
   * kinds must be served, i.e. their CRDs installed or the embedded store told about them).
   */
  instancetypes?: boolean;
  /**
   * Run the VirtualMachinePool controller (default false: the pool.kubevirt.io kind must
   * be served, i.e. its CRD installed or the embedded store told about it).
   */
  pools?: boolean;
  /**
   * Watch PersistentVolumeClaims (default false: the kind must be served): VMIs wait for
   * missing claims (FailedPvcNotFound) and VMs show WaitingForVolumeBinding.
   */
  volumes?: boolean;
  /**
   * Watch DataVolumes for the VM controller (default false: the kind must be served): VMs'
   * dataVolumeTemplates become DataVolumes and VMs wait for them.
   */
  dataVolumeTemplates?: boolean;
  /**
   * Run the VirtualMachineSnapshot, VirtualMachineSnapshotContent, VirtualMachineRestore
   * and VirtualMachineClone controllers (default false: the snapshot.kubevirt.io and
   * clone.kubevirt.io kinds, the CSI VolumeSnapshot kinds and StorageClasses must be
   * served). Watches claims too.
   */
  snapshots?: boolean;
  /** Freezes running sources with a guest agent during a snapshot (none: never frozen). */
  freezer?: VmiFreezer;
  /**
   * Watch NetworkAttachmentDefinitions (default false: the kind must be served, by its CRD
   * or the embedded store): a VMI naming a missing one gets no pod (FailedCreate).
   */
  networkAttachments?: boolean;
  /** How often an unserved NetworkAttachmentDefinition kind is probed again (default 30 s). */
  networkAttachmentRecheckMs?: number;
  /**
   * Run the node controller (node/controller.ts) with this virt-handler heartbeat timeout
   * in ms (upstream's is 5 minutes). Default off: it fails the VMIs of deleted Nodes, and
   * tests of the other controllers place VMIs on nodes no Node object stands for.
   */
  nodeHeartbeatTimeoutMs?: number;
  /**
   * Run the evacuation controller (evacuation/controller.ts): VMIs marked for evacuation
   * or on a drain-tainted node get migrations. Default off (it watches Nodes).
   */
  evacuation?: boolean;
  /**
   * Watch MigrationPolicies (migrations.kubevirt.io; default false: the kind must be
   * served, by its CRD): a migration's configuration takes the matching policy's.
   */
  migrationPolicies?: boolean;
  /** Run only while holding this coordination.k8s.io Lease (several replicas, one active). */
  leaderElection?: Omit<LeaderElectionOptions, 'identity'> & { identity?: string };
  /** Called when the Lease is lost after being held (default: the controllers stop). */
  onLostLeadership?: () => void;
  /** Called for every write the controllers make. */
  onWrite?: (w: WriteRecord) => void;
  /** Lines about the controller's own state, e.g. a kind it cannot watch (default console.warn). */
  log?: (line: string) => void;
  /** Reports reconcile errors (default console.warn). */
  onError?: (controller: string, key: string, err: Error) => void;
}
