/**
 * virt-api's `pods/eviction` webhook (upstream's pod-eviction-admitter.go, path
 * `/launcher-eviction-validate`): the eviction of a running virt-launcher pod whose VMI's
 * evictionStrategy (the VMI's, else the KubeVirt CR's default) asks for it becomes an
 * evacuation instead. The VMI gets `status.evacuationNodeName` (the pod's node) and the
 * eviction is answered 429 TooManyRequests ("Eviction triggered evacuation of VMI ..."),
 * which `kubectl drain` retries until the pod is gone. LiveMigrate refuses a VMI that is
 * not live-migratable (429 with the reason), LiveMigrateIfPossible lets it be evicted
 * then, External always marks it; None (or no strategy) lets the pod be evicted, which
 * stops the VMI. A dry-run eviction marks with a dry-run patch. The webhook's
 * failurePolicy is Ignore as upstream's: the launcher's PodDisruptionBudget still holds.
 *
 * A hotplug attachment pod (`hp-volume-*`, label `kubevirt.io: hotplug-disk`, owned by its
 * launcher pod) is never evicted while its launcher runs and the VMI exists (upstream's
 * `admitHotplugPod`): evicting it first would pull the claim from under the running guest
 * (upstream lost data that way), so the drain waits until the launcher pod, which owns it,
 * is gone and the attachment pod goes with it.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import type { Pod } from '../common/pod';
import { VmiResource } from '../common/vmi-resource';
import { NotFoundError } from '../runtime/errors';
import { PodType } from '../runtime/resources';
import type { AdmissionRequest } from './admission-review';
import type { WebhookContext, WebhookOutcome } from './webhooks';

/** upstream's annotation naming the launcher pod's VMI. */
const DOMAIN_ANNOTATION = 'kubevirt.io/domain';
const allow: WebhookOutcome = { allowed: true };

/** A 429 refusal with `message` (upstream's `denied`). */
export const tooManyRequests = (message: string): WebhookOutcome => ({
  allowed: false,
  causes: [],
  code: 429,
  message,
});

const migratable = (vmi: VirtualMachineInstance) =>
  (vmi.status?.conditions ?? []).some((c) => c.type === 'LiveMigratable' && c.status === 'True');

const isLauncher = (pod: Pod) => pod.metadata?.labels?.['kubevirt.io'] === 'virt-launcher';
const isCompleted = (pod: Pod) => pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded';
/** upstream's `isHotplugPod`: the attachment pods' label and their one owner, the launcher pod. */
const isHotplugPod = (pod: Pod) =>
  pod.metadata?.labels?.['kubevirt.io'] === 'hotplug-disk' && pod.metadata?.ownerReferences?.length === 1;

/** upstream's `admitHotplugPod`: refused while its launcher pod runs and the VMI exists. */
async function admitHotplugPod(pod: Pod, ctx: WebhookContext): Promise<WebhookOutcome> {
  const namespace = pod.metadata?.namespace;
  let owner: Pod;
  try {
    owner = await ctx.client.get<Pod>(PodType, pod.metadata?.ownerReferences?.[0]?.name ?? '', namespace);
  } catch (e) {
    if (e instanceof NotFoundError) return allow;
    return tooManyRequests(`failed getting owner for hotplug pod: ${(e as Error).message}`);
  }
  if (!isLauncher(owner) || isCompleted(owner)) return allow;
  const vmiName = owner.metadata?.annotations?.[DOMAIN_ANNOTATION];
  if (!vmiName) return allow;
  try {
    await ctx.client.get<VirtualMachineInstance>(VmiResource, vmiName, namespace);
  } catch (e) {
    if (e instanceof NotFoundError) return allow;
    return tooManyRequests(`kubevirt failed getting the vmi: ${(e as Error).message}`);
  }
  return tooManyRequests(
    `cannot evict hotplug pod: ${pod.metadata?.name} associated with running vmi: ${vmiName} in namespace ${namespace}`,
  );
}

/** The webhook. */
export async function admitPodEviction(req: AdmissionRequest, ctx: WebhookContext): Promise<WebhookOutcome> {
  if (req.resource.resource !== 'pods' || req.subResource !== 'eviction') return allow;
  let pod: Pod;
  try {
    pod = await ctx.client.get<Pod>(PodType, req.name ?? '', req.namespace);
  } catch {
    // upstream: a pod it cannot read is not its concern.
    return allow;
  }
  if (isHotplugPod(pod)) return admitHotplugPod(pod, ctx);
  if (!isLauncher(pod) || isCompleted(pod)) return allow;
  const vmiName = pod.metadata?.annotations?.[DOMAIN_ANNOTATION];
  if (!vmiName) return allow;
  let vmi: VirtualMachineInstance;
  try {
    vmi = await ctx.client.get<VirtualMachineInstance>(VmiResource, vmiName, req.namespace);
  } catch (e) {
    return tooManyRequests(
      `kubevirt failed getting the vmi: ${e instanceof NotFoundError ? 'not found' : (e as Error).message}`,
    );
  }
  const strategy = vmi.spec?.evictionStrategy ?? ctx.config().evictionStrategy;
  let mark = false;
  switch (strategy) {
    case 'LiveMigrate':
      if (!migratable(vmi))
        return tooManyRequests(
          `VMI ${vmi.metadata?.name} is configured with an eviction strategy but is not live-migratable`,
        );
      mark = true;
      break;
    case 'LiveMigrateIfPossible':
      mark = migratable(vmi);
      break;
    case 'External':
      mark = true;
      break;
  }
  if (!mark) return allow;
  const what = `Eviction triggered evacuation of VMI "${vmi.metadata?.namespace}/${vmi.metadata?.name}"`;
  if (vmi.status?.evacuationNodeName) return tooManyRequests(`Evacuation in progress: ${what}`);
  if (vmi.status?.nodeName !== pod.spec?.nodeName) return tooManyRequests('Eviction request for target Pod');
  const eviction = (req.object ?? {}) as { deleteOptions?: { dryRun?: string[] } };
  const dryRun = req.dryRun === true || eviction.deleteOptions?.dryRun?.[0] === 'All';
  try {
    await ctx.client.patch(
      VmiResource,
      vmiName,
      [{ op: 'add', path: '/status/evacuationNodeName', value: pod.spec?.nodeName }],
      { type: 'json', namespace: req.namespace, ...(dryRun ? { dryRun: true } : {}) },
    );
  } catch (e) {
    return tooManyRequests(`kubevirt failed marking the vmi for eviction: ${(e as Error).message}`);
  }
  return tooManyRequests(what);
}
