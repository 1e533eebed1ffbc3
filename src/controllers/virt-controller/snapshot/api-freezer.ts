/**
 * The snapshot source's freeze and thaw through virt-api's `subresources.kubevirt.io`
 * freeze/unfreeze (as upstream's controller calls them through its client): virt-api
 * forwards to the node's handler, which asks the launcher's guest agent.
 */
import type { HttpRequest, HttpResponse } from '../../runtime/kube/transport';
import type { VmiFreezer } from './source';

/** Go's duration text of `ms` (whole seconds, as upstream's metav1.Duration marshals them). */
function goDuration(ms: number): string {
  return ms <= 0 ? '0s' : `${Math.ceil(ms / 1000)}s`;
}

/** A freezer over `request` (e.g. KubeClient.request). */
export function apiFreezer(request: (req: HttpRequest) => Promise<HttpResponse>): VmiFreezer {
  const call = async (ns: string, name: string, op: 'freeze' | 'unfreeze', body: unknown) => {
    const path = `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(ns)}/virtualmachineinstances/${encodeURIComponent(name)}/${op}`;
    const res = await request({ method: 'PUT', path, body, contentType: 'application/json' });
    if (res.status >= 300) {
      let msg = res.body;
      try {
        msg = (JSON.parse(res.body) as { message?: string }).message ?? msg;
      } catch {}
      throw new Error(`${op} ${ns}/${name}: ${msg}`);
    }
  };
  return {
    // The guest thaws itself after the snapshot's failure deadline if never unfrozen.
    freeze: (ns, name, unfreezeTimeoutMs) =>
      call(ns, name, 'freeze', { unfreezeTimeout: goDuration(unfreezeTimeoutMs) }),
    unfreeze: (ns, name) => call(ns, name, 'unfreeze', {}),
  };
}
