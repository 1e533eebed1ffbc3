/**
 * Which of upstream's clientsets a request path belongs to, i.e. which client rate limit
 * it counts against. Upstream's components talk to
 * the API through kubecli, which builds the Kubernetes clientset, the KubeVirt clientset,
 * CDI's, the network-attachment one, ... from one rest.Config with QPS/burst and no shared
 * RateLimiter, so each clientset gets its own token bucket at that QPS/burst (client-go's
 * NewForConfig): launcher pods and Events do not wait behind VMI writes. The same here:
 * the built-in groups (`/api`, `/apis/<group>` with no dot or ending in `.k8s.io`) are
 * the Kubernetes clientset, `*.kubevirt.io` the KubeVirt one (CDI's `cdi.kubevirt.io`
 * its own), every other group its own.
 */
export function clientsetOf(path: string): string {
  if (!path.startsWith('/apis/')) return 'kubernetes';
  const group = path.slice('/apis/'.length).split('/', 1)[0];
  if (group === 'snapshot.storage.k8s.io' || group === 'apiextensions.k8s.io') return group;
  if (!group.includes('.') || group.endsWith('.k8s.io')) return 'kubernetes';
  if (group.endsWith('cdi.kubevirt.io')) return 'cdi';
  if (group === 'kubevirt.io' || group.endsWith('.kubevirt.io')) return 'kubevirt';
  return group;
}
