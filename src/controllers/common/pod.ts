/**
 * The core/v1 Pod fields the virt-controller writes and reads, as plain JSON shapes.
 * (The swagger document of kubevirt.io carries no Pod; these are the subset of
 * k8s.io/api/core/v1 the launcher pod uses, spelled as the API serialises them.)
 */
import type { ObjectMeta } from '../runtime/types';

export type ResourceList = Record<string, string>;

/** A pod's seccomp profile (core/v1 SeccompProfile). */
export interface SeccompProfile {
  type: 'RuntimeDefault' | 'Localhost' | 'Unconfined';
  /** With `Localhost`: the profile's path under the kubelet's seccomp directory. */
  localhostProfile?: string;
}

/** A container probe (core/v1 Probe): one handler and its timing. */
export interface PodProbe {
  exec?: { command: string[] };
  httpGet?: {
    host?: string;
    path?: string;
    port: string | number;
    scheme?: 'HTTP' | 'HTTPS';
    httpHeaders?: Array<{ name: string; value: string }>;
  };
  tcpSocket?: { host?: string; port: string | number };
  initialDelaySeconds?: number;
  timeoutSeconds?: number;
  periodSeconds?: number;
  successThreshold?: number;
  failureThreshold?: number;
}

export interface PodContainer {
  name: string;
  image: string;
  imagePullPolicy?: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  resources?: { requests?: ResourceList; limits?: ResourceList };
  volumeMounts?: Array<{
    name: string;
    mountPath: string;
    readOnly?: boolean;
    mountPropagation?: string;
    subPath?: string;
  }>;
  /** Block-mode claims as device nodes (core/v1 VolumeDevice). */
  volumeDevices?: Array<{ name: string; devicePath: string }>;
  securityContext?: {
    runAsUser?: number;
    runAsNonRoot?: boolean;
    privileged?: boolean;
    capabilities?: { add?: string[]; drop?: string[] };
  };
  ports?: Array<{ name?: string; containerPort: number; protocol?: string }>;
  readinessProbe?: PodProbe;
  livenessProbe?: PodProbe;
  /** Where the container writes its termination message (default /dev/termination-log). */
  terminationMessagePath?: string;
  terminationMessagePolicy?: string;
  /** Only an exec postStart hook is rendered (containerDisks: container-disk-containers.ts). */
  lifecycle?: { postStart?: { exec: { command: string[] } } };
}

/** One key of a configMap/secret volume projected to a file (`path`, optional mode bits). */
export interface KeyToPath {
  key: string;
  path: string;
  mode?: number;
}

/** One file of a downwardAPI volume: a field of the pod's metadata. */
export interface DownwardAPIFile {
  path: string;
  fieldRef?: { fieldPath: string; apiVersion?: string };
  resourceFieldRef?: unknown;
  mode?: number;
}

export interface PodVolume {
  name: string;
  emptyDir?: { medium?: string; sizeLimit?: string };
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  configMap?: { name: string; optional?: boolean; items?: KeyToPath[]; defaultMode?: number };
  secret?: { secretName: string; optional?: boolean; items?: KeyToPath[]; defaultMode?: number };
  downwardAPI?: { items?: DownwardAPIFile[]; defaultMode?: number };
  projected?: {
    defaultMode?: number;
    sources: Array<{
      configMap?: { name: string; optional?: boolean; items?: KeyToPath[] };
      secret?: { name: string; optional?: boolean; items?: KeyToPath[] };
      downwardAPI?: { items?: DownwardAPIFile[] };
      serviceAccountToken?: { path: string; expirationSeconds?: number; audience?: string };
    }>;
  };
  hostPath?: { path: string; type?: string };
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string | null;
}

export interface ContainerStatus {
  name: string;
  ready?: boolean;
  restartCount?: number;
  /** The runtime's ID of the container (`containerd://<hex>`), once it was created. */
  containerID?: string;
  state?: {
    waiting?: { reason?: string; message?: string };
    running?: { startedAt?: string };
    terminated?: { exitCode?: number; reason?: string; message?: string };
  };
  /** The previous run of a restarted container. */
  lastState?: { terminated?: { exitCode?: number; reason?: string; message?: string } };
}

/** A launcher Pod (or any pod the controllers look at). */
export interface Pod {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: {
    nodeName?: string;
    hostname?: string;
    subdomain?: string;
    restartPolicy?: string;
    terminationGracePeriodSeconds?: number;
    containers: PodContainer[];
    initContainers?: PodContainer[];
    shareProcessNamespace?: boolean;
    nodeSelector?: Record<string, string>;
    affinity?: unknown;
    tolerations?: unknown[];
    topologySpreadConstraints?: unknown[];
    volumes?: PodVolume[];
    securityContext?: {
      runAsUser?: number;
      runAsGroup?: number;
      runAsNonRoot?: boolean;
      fsGroup?: number;
      seccompProfile?: SeccompProfile;
    };
    readinessGates?: Array<{ conditionType: string }>;
    enableServiceLinks?: boolean;
    automountServiceAccountToken?: boolean;
    serviceAccountName?: string;
    schedulerName?: string;
    priorityClassName?: string;
    dnsConfig?: unknown;
    dnsPolicy?: string;
    hostNetwork?: boolean;
  };
  status?: {
    phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
    conditions?: PodCondition[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
    podIP?: string;
    podIPs?: Array<{ ip: string }>;
    hostIP?: string;
    qosClass?: string;
    reason?: string;
    message?: string;
    startTime?: string;
  };
}
