/**
 * Every install object of kubevirt-ts, one renderer per component (this folder), grouped
 * into the files `scripts/gen-manifests.ts` writes to manifests/ (applied in name order).
 * The operator (a later issue) reconciles the same objects.
 */
import type { KubeObject } from '../../runtime/types';
import { aggregatedRoleObjects } from './cluster-roles';
import { crdObjects } from './crds';
import { checkInstallOptions, type InstallOptions } from './install-options';
import { prometheusMetricsService } from './metrics';
import { networkAttachmentDefinitionCrd } from './nad-crd';
import { namespaceObjects } from './namespace';
import { virtControllerObjects } from './virt-controller';
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
  };
}
