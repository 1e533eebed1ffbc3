/**
 * How KubeVirt and CDI find the external host of one of their proxies: an Ingress
 * (networking.k8s.io/v1) in the install namespace whose backend is the proxy's Service
 * (CDI's getURLFromIngress for cdi-uploadproxy, KubeVirt's getHostFromIngress for
 * virt-exportproxy: the same rule).
 */
import type { KubeObject } from '../runtime/types';

/** The fields of an Ingress these controllers look at. */
export interface IngressObject extends KubeObject {
  spec?: {
    defaultBackend?: { service?: { name?: string } };
    rules?: Array<{
      host?: string;
      http?: { paths?: Array<{ backend?: { service?: { name?: string } } }> };
    }>;
    tls?: Array<{ hosts?: string[]; secretName?: string }>;
  };
}

/**
 * The host an Ingress gives Service `service`: with a default backend, its first rule's
 * host when that backend is the Service; else the host of the first rule with a path to
 * it. Empty when the Ingress does not lead there.
 */
export function ingressHostFor(ing: IngressObject, service: string): string {
  const def = ing.spec?.defaultBackend?.service;
  if (def) return def.name === service ? (ing.spec?.rules?.[0]?.host ?? '') : '';
  for (const rule of ing.spec?.rules ?? [])
    if (rule.host && rule.http?.paths?.some((p) => p.backend?.service?.name === service)) return rule.host;
  return '';
}
