/**
 * Every install object of kubevirt-ts, one renderer per component (this folder), grouped
 * into the files `scripts/gen-manifests.ts` writes to manifests/ (applied in name order).
 * The operator (a later issue) reconciles the same objects.
 */
import type { KubeObject } from '../../runtime/types';
import { cdiUploadProxyObjects } from './cdi-uploadproxy';
import { HANDLER_SERVER_CERTS } from './cert-secrets';
import { aggregatedRoleObjects } from './cluster-roles';
import { crdObjects } from './crds';
import { checkInstallOptions, type InstallOptions } from './install-options';
import { prometheusMetricsService } from './metrics';
import { networkAttachmentDefinitionCrd } from './nad-crd';
import { namespaceObjects } from './namespace';
import { storageObjects } from './storage';
import { plainVirtApiObjects } from './virt-api-plain';
import { virtControllerObjects } from './virt-controller';
import { virtExportProxyObjects } from './virt-exportproxy';
import { virtHandlerObjects } from './virt-handler';

export { defaultInstallOptions, type InstallOptions } from './install-options';

/** The install, file name -> objects. */
export function renderInstall(o: InstallOptions, crdsDir: string): Record<string, KubeObject[]> {
  checkInstallOptions(o);
  return {
    '00-namespace.yaml': namespaceObjects(o),
    '01-crds.yaml': [...crdObjects(crdsDir), networkAttachmentDefinitionCrd()],
    '02-aggregated-roles.yaml': aggregatedRoleObjects(),
    '10-virt-controller.yaml': virtControllerObjects(o),
    '20-virt-handler.yaml': virtHandlerObjects(o),
    '30-metrics-service.yaml': [prometheusMetricsService(o)],
    // The CSI driver, its sidecars, snapshot-controller, the snapshot CRDs and the classes.
    '40-storage.yaml': storageObjects(o, crdsDir),
    // CDI's upload proxy (virtctl image-upload's endpoint).
    '45-cdi-uploadproxy.yaml': cdiUploadProxyObjects(o),
    // The export proxy (VirtualMachineExports' external links, through an Ingress to it).
    '46-virt-exportproxy.yaml': virtExportProxyObjects(o),
  };
}

/**
 * The plain install (manifests/, no operator): {@link renderInstall} with virt-api and
 * virt-certs (which makes the certificates the operator would), and virt-handler serving
 * virt-api's REST API with the certificate virt-certs makes.
 */
export function renderPlainInstall(o: InstallOptions, crdsDir: string): Record<string, KubeObject[]> {
  const plain = { ...o, handlerServerCerts: o.handlerServerCerts ?? HANDLER_SERVER_CERTS };
  return { ...renderInstall(plain, crdsDir), '25-virt-api.yaml': plainVirtApiObjects(plain) };
}
