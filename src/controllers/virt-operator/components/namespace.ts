/** The install's Namespace. */
import type { KubeObject } from '../../runtime/types';
import { componentLabels, type InstallOptions } from './install-options';

/** The components' namespace (privileged Pod Security: virt-handler needs it). */
export function namespaceObjects(o: InstallOptions): KubeObject[] {
  return [
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: o.namespace,
        labels: { ...componentLabels('namespace'), 'pod-security.kubernetes.io/enforce': 'privileged' },
      },
    } as KubeObject,
  ];
}
