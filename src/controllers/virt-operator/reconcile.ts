/**
 * One reconcile of a KubeVirt CR, as upstream's virt-operator: the oldest CR that is not
 * being deleted is the install; others are refused (`ExistingDeployment`). For the install:
 * finalizer `foregroundDeleteKubeVirt`, spec checked, certificates planned (renewed when
 * due), every object applied, virt-handler held at its version until virt-api and
 * virt-controller are ready at the new one, status written. A CR being deleted removes
 * what was installed (unless `uninstallStrategy` blocks it while VMIs exist), then its
 * finalizer.
 */
import type { KubeVirt, KubeVirtStatus } from '../../api/generated/types';
import { pickKubeVirt } from '../config/kubevirt-config';
import { NotFoundError } from '../runtime/errors';
import { KubeVirtType, VirtualMachineInstanceType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { type ApplyResult, applyAll, deleteAll, deleteCrdsFirst, listManaged } from './apply';
import { KUBEVIRT_FINALIZER, VERSION_ANNOTATION } from './bookkeeping';
import { planCertificates } from './cert-rotation';
import { readCertState } from './cert-state';
import { renderInstallObjects } from './install-objects';
import { checkKubeVirt, type ImageDefaults } from './kubevirt-spec';
import { notReadyReason } from './readiness';
import { DaemonSetType, DeploymentType } from './resource-types';
import { nextStatus, type Observation, REASON } from './status';

/** What the reconcile needs besides the client. */
export interface OperatorContext {
  client: ObjectClient;
  /** The install namespace (the operator's, where the KubeVirt CR lives). */
  namespace: string;
  crdsDir: string;
  images: ImageDefaults;
  devCluster?: { apiServerPort: number };
  /** The kubelet's --root-dir on the nodes (default /var/lib/kubelet). */
  kubeletRootDir?: string;
  /** The CSI pool's place and size on the nodes (InstallOptions.csiPoolDir, csiPoolSize). */
  storage?: { csiPoolDir?: string; csiPoolSize?: string };
  now?: () => Date;
  /** Reports what a pass changed. */
  onApply?: (r: ApplyResult) => void;
}

/** How soon to look again. */
export interface ReconcileOutcome {
  requeueAfterMs?: number;
}

type KV = KubeVirt & KubeObject;

const POLL_MS = 5_000;
const RESYNC_MS = 60_000;

async function writeStatus(ctx: OperatorContext, kv: KV, o: Observation): Promise<void> {
  const next = nextStatus(kv.status, o, (ctx.now ?? (() => new Date()))());
  const strip = (s: KubeVirtStatus | undefined) =>
    JSON.stringify({ ...s, conditions: s?.conditions?.map(({ lastProbeTime: _p, ...c }) => c) });
  if (strip(next) === strip(kv.status)) return;
  await ctx.client.updateStatus(KubeVirtType, { ...kv, status: next });
}

async function setFinalizer(ctx: OperatorContext, kv: KV, on: boolean): Promise<KV> {
  const has = kv.metadata?.finalizers?.includes(KUBEVIRT_FINALIZER) ?? false;
  if (has === on) return kv;
  const finalizers = on
    ? [...(kv.metadata?.finalizers ?? []), KUBEVIRT_FINALIZER]
    : (kv.metadata?.finalizers ?? []).filter((f) => f !== KUBEVIRT_FINALIZER);
  return ctx.client.update(KubeVirtType, { ...kv, metadata: { ...kv.metadata, finalizers } });
}

async function uninstall(ctx: OperatorContext, kv: KV): Promise<ReconcileOutcome> {
  const strategy = kv.spec?.uninstallStrategy ?? '';
  if (strategy !== 'RemoveWorkloads') {
    // BlockUninstallIfWorkloadsExist (also the default): refuse while VMIs exist.
    let vmis = 0;
    try {
      vmis = (await ctx.client.list(VirtualMachineInstanceType, { limit: 1 })).items.length;
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e; // no VMI CRD: nothing can run
    }
    if (vmis > 0) {
      await writeStatus(ctx, kv, {
        kind: 'deleting',
        blocked:
          'uninstallStrategy BlockUninstallIfWorkloadsExist: VirtualMachineInstances still exist; delete them or set spec.uninstallStrategy to RemoveWorkloads',
      });
      return { requeueAfterMs: POLL_MS };
    }
  }
  await writeStatus(ctx, kv, { kind: 'deleting' });
  // The CRDs first, and the components once they are gone (upstream's DeleteAll).
  const crds = await deleteCrdsFirst(ctx.client, ctx.namespace);
  if (crds.deleted.length) ctx.onApply?.({ created: [], updated: [], deleted: crds.deleted });
  if (crds.left) return { requeueAfterMs: POLL_MS };
  const deleted = await deleteAll(ctx.client, ctx.namespace);
  ctx.onApply?.({ created: [], updated: [], deleted });
  const fresh = await ctx.client.get<KV>(KubeVirtType, kv.metadata!.name!, kv.metadata?.namespace);
  await writeStatus(ctx, fresh, { kind: 'deleted' });
  await setFinalizer(
    ctx,
    await ctx.client.get<KV>(KubeVirtType, kv.metadata!.name!, kv.metadata?.namespace),
    false,
  );
  return {};
}

/** Reconciles the KubeVirt CR `name` in the operator's namespace. */
export async function reconcileKubeVirt(ctx: OperatorContext, name: string): Promise<ReconcileOutcome> {
  const all = (await ctx.client.list<KV>(KubeVirtType, { namespace: ctx.namespace })).items;
  const kv = all.find((k) => k.metadata?.name === name);
  if (!kv) return {};
  const active = pickKubeVirt(all);
  const generation = kv.metadata?.generation ?? 0;
  if (kv.metadata?.deletionTimestamp) {
    if (!kv.metadata.finalizers?.includes(KUBEVIRT_FINALIZER)) return {};
    // Another CR still installs: this one's deletion removes nothing.
    if (active) {
      await setFinalizer(ctx, kv, false);
      return {};
    }
    return uninstall(ctx, kv);
  }
  if (active?.metadata?.uid !== kv.metadata?.uid) {
    await writeStatus(ctx, kv, {
      kind: 'failed',
      reason: REASON.existing,
      message: `An earlier KubeVirt resource is the install: ${active?.metadata?.name}`,
      generation,
    });
    return {};
  }
  const current = await setFinalizer(ctx, kv, true);
  const { spec, errors } = checkKubeVirt(current, ctx.images);
  if (!spec) {
    await writeStatus(ctx, current, {
      kind: 'failed',
      reason: REASON.invalid,
      message: errors.join('; '),
      generation,
    });
    return {};
  }
  const now = (ctx.now ?? (() => new Date()))();
  try {
    const certs = await planCertificates(
      ctx.namespace,
      await readCertState(ctx.client, ctx.namespace),
      spec.certs,
      now,
    );
    const desired = renderInstallObjects(
      {
        namespace: ctx.namespace,
        crdsDir: ctx.crdsDir,
        devCluster: ctx.devCluster,
        kubeletRootDir: ctx.kubeletRootDir,
        storage: ctx.storage,
        generation,
      },
      spec,
      certs,
    );
    const deployments = await listManaged(ctx.client, DeploymentType, ctx.namespace);
    const infraNotReady = deployments.map((d) => notReadyReason(d, spec.tag)).filter((r) => r !== undefined);
    const daemonSets = await listManaged(ctx.client, DaemonSetType, ctx.namespace);
    const observed = current.status?.observedKubeVirtVersion;
    const updating = observed !== undefined && observed !== spec.tag;
    // virt-handler moves to a new version only after virt-api and virt-controller run it.
    const hold = (o: KubeObject) =>
      o.kind === 'DaemonSet' &&
      (deployments.length === 0 || infraNotReady.length > 0) &&
      daemonSets.some(
        (d) =>
          d.metadata?.name === o.metadata?.name && d.metadata?.annotations?.[VERSION_ANNOTATION] !== spec.tag,
      );
    const applied = await applyAll(ctx.client, ctx.namespace, desired, hold);
    ctx.onApply?.(applied);
    const workloads = [
      ...(await listManaged(ctx.client, DeploymentType, ctx.namespace)),
      ...(await listManaged(ctx.client, DaemonSetType, ctx.namespace)),
    ];
    const notReady = workloads.map((w) => notReadyReason(w, spec.tag)).filter((r) => r !== undefined);
    const registry = spec.registry.replace(/\/$/, '');
    const fresh = await ctx.client.get<KV>(KubeVirtType, name, ctx.namespace);
    await writeStatus(
      ctx,
      fresh,
      notReady.length === 0
        ? { kind: 'deployed', version: spec.tag, registry, generation }
        : { kind: 'deploying', version: spec.tag, registry, generation, notReady, updating },
    );
    const untilRenewal = certs.nextRenewal.getTime() - now.getTime();
    return { requeueAfterMs: Math.max(1_000, Math.min(untilRenewal, notReady.length ? POLL_MS : RESYNC_MS)) };
  } catch (e) {
    const fresh = await ctx.client.get<KV>(KubeVirtType, name, ctx.namespace);
    await writeStatus(ctx, fresh, {
      kind: 'failed',
      reason: REASON.failed,
      message: (e as Error).message,
      generation,
      version: spec.tag,
      registry: spec.registry,
    });
    throw e;
  }
}
