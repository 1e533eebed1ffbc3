/**
 * `PUT .../virtualmachineinstances/{name}/evacuate/cancel` and
 * `.../virtualmachines/{name}/evacuate/cancel` (upstream's rest/evacuate_cancel.go, what
 * `virtctl evacuate-cancel vmi|vm NAME` calls): removes the VMI's
 * `status.evacuationNodeName`, so the evacuation controller creates no further migration
 * for it (a migration already created runs on; `virtctl migrate-cancel` stops it). The
 * body is upstream's EvacuateCancelOptions: `evacuationNodeName` must still be the VMI's
 * (a JSON patch test, so a newer evacuation is not cancelled by a stale request) and
 * `dryRun`. Refused with 400, as upstream, while the node still carries the drain taint
 * (`migrations.nodeDrainTaintKey`, default `kubevirt.io/drain`): the taint would mark the
 * VMI again.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import { VmiResource } from '../common/vmi-resource';
import { NodeType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { HttpError } from './http-error';
import type { Vmi } from './vmi-subresources';

const DEFAULT_DRAIN_TAINT = 'kubevirt.io/drain';

type NodeObject = KubeObject & { spec?: { taints?: { key: string; value?: string; effect: string }[] } };

/** upstream's EvacuateCancelOptions, checked. */
function options(body: unknown): { evacuationNodeName: string; dryRun: boolean } {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body))
    throw new HttpError(400, 'No body');
  const b = body as { evacuationNodeName?: unknown; dryRun?: unknown };
  if (typeof b.evacuationNodeName !== 'string' || b.evacuationNodeName === '')
    throw new HttpError(400, 'evacuationNodeName: required (the node the VMI is evacuated from)');
  if (b.dryRun !== undefined && !(Array.isArray(b.dryRun) && b.dryRun.every((d) => d === 'All')))
    throw new HttpError(400, 'dryRun: must be a list of "All"');
  return { evacuationNodeName: b.evacuationNodeName, dryRun: Array.isArray(b.dryRun) && b.dryRun.length > 0 };
}

/** Cancels the evacuation of `vmi` (fetched by the caller, for a VM or a VMI). */
export async function evacuateCancel(
  client: ObjectClient,
  config: ClusterConfig,
  vmi: Vmi,
  body: unknown,
): Promise<Record<string, never>> {
  const key = config.migrations.nodeDrainTaintKey || DEFAULT_DRAIN_TAINT;
  const nodeName = vmi.status?.evacuationNodeName || vmi.status?.nodeName;
  if (nodeName) {
    let node: NodeObject;
    try {
      node = await client.get<NodeObject>(NodeType, nodeName);
    } catch (e) {
      throw new HttpError(500, `reading node ${nodeName}: ${(e as Error).message}`);
    }
    const t = (node.spec?.taints ?? []).find((x) => x.key === key && x.effect === 'NoSchedule');
    if (t)
      throw new HttpError(
        400,
        `Node "${nodeName}" has NodeDrainTaintKey "${t.key}${t.value ? `=${t.value}` : ''}:NoSchedule"`,
      );
  }
  if (!vmi.status?.evacuationNodeName) return {};
  const o = options(body);
  const path = '/status/evacuationNodeName';
  try {
    await client.patch(
      VmiResource,
      vmi.metadata?.name ?? '',
      [
        { op: 'test', path, value: o.evacuationNodeName },
        { op: 'remove', path },
      ],
      { type: 'json', namespace: vmi.metadata?.namespace, ...(o.dryRun ? { dryRun: true } : {}) },
    );
  } catch (e) {
    throw new HttpError(500, `cancelling the evacuation of ${vmi.metadata?.name}: ${(e as Error).message}`);
  }
  return {};
}
