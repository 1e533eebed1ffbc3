/**
 * What the operator takes from a KubeVirt CR's spec, checked: `spec.configuration` by the
 * same admission function virt-api's `/kubevirt-validate` webhook runs, the image
 * settings, node placement, `uninstallStrategy`, certificate durations
 * (`workloadUpdateStrategy` is checked there too; virt-controller's workload updater acts on it). Fields the
 * operator does not implement are refused by name instead of being ignored.
 */
import { createClusterConfig } from '../../api/config/cluster-config';
import type { ComponentConfig, KubeVirt, KubeVirtSpec } from '../../api/generated/types';
import { type ApiObject, admit } from '../../api/validation/admission';
import { type CertDurations, certDurations } from './cert-config';

/** spec fields the operator does not act on (refused when set). */
const UNSUPPORTED: (keyof KubeVirtSpec)[] = [
  'customizeComponents',
  'imagePullSecrets',
  'monitorAccount',
  'monitorNamespace',
  'serviceMonitorNamespace',
  'productComponent',
  'productName',
  'productVersion',
  'synchronizationPort',
];

export const UNINSTALL_STRATEGIES = ['', 'RemoveWorkloads', 'BlockUninstallIfWorkloadsExist'] as const;

/** The operator's defaults for images (from its own flags / image). */
export interface ImageDefaults {
  registry: string;
  tag: string;
  pullPolicy: 'Always' | 'IfNotPresent' | 'Never';
}

/** The checked spec. */
export interface InstallSpec {
  registry: string;
  tag: string;
  pullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  infra?: ComponentConfig;
  workloads?: ComponentConfig;
  uninstallStrategy: (typeof UNINSTALL_STRATEGIES)[number];
  certs: CertDurations;
  /** `configuration.virtualMachineInstancesPerNode`: virt-handler's --max-devices. */
  maxDevices?: number;
}

const REGISTRY = /^[A-Za-z0-9][A-Za-z0-9._\-/:]{0,200}$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/** Checks `kv`; returns the spec or every problem as `field: message`. */
export function checkKubeVirt(kv: KubeVirt, d: ImageDefaults): { spec?: InstallSpec; errors: string[] } {
  const errors: string[] = [];
  const s = kv.spec ?? {};
  for (const f of UNSUPPORTED)
    if (s[f] !== undefined) errors.push(`spec.${f}: not supported by kubevirt-ts's virt-operator`);
  const adm = admit(kv as unknown as ApiObject, createClusterConfig(undefined));
  for (const e of adm.errors) errors.push(`${e.path}: ${e.message}`);
  const registry = s.imageRegistry ?? d.registry;
  const tag = s.imageTag ?? d.tag;
  if (!REGISTRY.test(registry))
    errors.push(`spec.imageRegistry: ${JSON.stringify(registry)} is not a registry`);
  if (!TAG.test(tag)) errors.push(`spec.imageTag: ${JSON.stringify(tag)} is not an image tag`);
  const pullPolicy = s.imagePullPolicy ?? d.pullPolicy;
  if (!['Always', 'IfNotPresent', 'Never'].includes(pullPolicy))
    errors.push(`spec.imagePullPolicy: ${JSON.stringify(pullPolicy)} is not Always, IfNotPresent or Never`);
  const uninstallStrategy = (s.uninstallStrategy ?? '') as InstallSpec['uninstallStrategy'];
  if (!UNINSTALL_STRATEGIES.includes(uninstallStrategy))
    errors.push(
      `spec.uninstallStrategy: ${JSON.stringify(s.uninstallStrategy)} is not RemoveWorkloads or BlockUninstallIfWorkloadsExist`,
    );
  for (const [k, c] of [
    ['infra', s.infra],
    ['workloads', s.workloads],
  ] as const) {
    if (c?.replicas !== undefined && (!Number.isInteger(c.replicas) || c.replicas < 1))
      errors.push(`spec.${k}.replicas: ${c.replicas} is not a whole number >= 1`);
  }
  if (s.workloads?.replicas !== undefined)
    errors.push(
      'spec.workloads.replicas: virt-handler runs on every selected node; replicas applies to spec.infra only',
    );
  const perNode = s.configuration?.virtualMachineInstancesPerNode;
  if (perNode !== undefined && (!Number.isInteger(perNode) || perNode < 1 || perNode > 999_999))
    errors.push(
      `spec.configuration.virtualMachineInstancesPerNode: ${perNode} is not a whole number from 1 to 999999`,
    );
  let certs: CertDurations | undefined;
  try {
    certs = certDurations(s);
  } catch (e) {
    errors.push((e as Error).message);
  }
  if (errors.length || !certs) return { errors };
  return {
    errors,
    spec: {
      registry,
      tag,
      pullPolicy,
      infra: s.infra,
      workloads: s.workloads,
      uninstallStrategy,
      certs,
      ...(perNode !== undefined ? { maxDevices: perNode } : {}),
    },
  };
}
