/**
 * CDI's config controller (pkg/controller/config-controller.go), the part the upload path
 * reads: the cluster's one CDIConfig, `config`, is made when missing, and its
 * `status.uploadProxyURL` is `spec.uploadProxyURLOverride`, else the host of an Ingress in
 * CDI's namespace routing to the `cdi-uploadproxy` Service, else unset. `virtctl
 * image-upload` uses it when `--uploadproxy-url` is not given. CDI's third source, an
 * OpenShift Route, does not exist here.
 */
import type { CDIConfig } from '../../api/generated/cdi/types';
import type { ControllerDeps, KeyReconciler, ReconcileResult } from '../common/controller-ports';
import { type IngressObject, ingressHostFor } from '../common/ingress';
import { AlreadyExistsError, ConflictError } from '../runtime/errors';
import { CDIConfigType } from '../runtime/resources';
import type { KubeObject } from '../runtime/types';

/** CDI's one CDIConfig. */
export const CDI_CONFIG_NAME = 'config';
/** The upload proxy's Service, which an Ingress must route to. */
export const UPLOAD_PROXY_SERVICE = 'cdi-uploadproxy';

export type { IngressObject } from '../common/ingress';

/** The upload proxy's host an Ingress gives (CDI's getURLFromIngress, common/ingress.ts). */
export function uploadProxyHostOf(ing: IngressObject, service = UPLOAD_PROXY_SERVICE): string {
  return ingressHostFor(ing, service);
}

/** `status.uploadProxyURL` as CDI sets it: the override, else the first Ingress's host. */
export function uploadProxyUrlFor(config: CDIConfig, ingresses: IngressObject[]): string | undefined {
  if (config.spec?.uploadProxyURLOverride !== undefined) return config.spec.uploadProxyURLOverride;
  for (const ing of ingresses) {
    const host = uploadProxyHostOf(ing);
    if (host) return host;
  }
  return undefined;
}

export interface CdiConfigControllerDeps extends ControllerDeps {
  config: () => CDIConfig | undefined;
  /** The Ingresses of CDI's namespace (none where no Ingress is watched: local mode). */
  ingresses: () => IngressObject[];
}

/** Reconciles the key `config` (other names are not CDI's and are left alone). */
export class CdiConfigController implements KeyReconciler {
  constructor(private readonly d: CdiConfigControllerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    if (key !== CDI_CONFIG_NAME) return undefined;
    let config = this.d.config();
    if (!config) {
      try {
        config = (await this.d.client.create(CDIConfigType, {
          apiVersion: 'cdi.kubevirt.io/v1beta1',
          kind: 'CDIConfig',
          metadata: { name: CDI_CONFIG_NAME },
          spec: {},
        } as KubeObject)) as unknown as CDIConfig;
      } catch (err) {
        if (err instanceof AlreadyExistsError || err instanceof ConflictError)
          return { requeueAfterMs: 1000 };
        throw err;
      }
    }
    const url = uploadProxyUrlFor(config, this.d.ingresses());
    if (config.status?.uploadProxyURL === url) return undefined;
    const status = { ...config.status };
    if (url === undefined) delete status.uploadProxyURL;
    else status.uploadProxyURL = url;
    try {
      await this.d.client.updateStatus(CDIConfigType, { ...config, status } as unknown as KubeObject);
    } catch (err) {
      if (err instanceof ConflictError) return { requeueAfterMs: 500 };
      throw err;
    }
    return undefined;
  }
}
