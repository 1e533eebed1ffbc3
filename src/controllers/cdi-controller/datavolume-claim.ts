/**
 * The PersistentVolumeClaim a DataVolume makes for an import or upload: the rendered claim
 * spec (claim-spec.ts) with CDI's labels and annotations (what it imports from, the
 * importer pod's name, an upload's request for its pod), owned by the DataVolume.
 */
import type { DataVolume } from '../../api/generated/cdi/types';
import { UPLOAD_REQUEST_ANNOTATION } from '../common/cdi-upload';
import { controllerRef } from '../common/owner-ref';
import { CdiLabels } from './annotations';
import type { ClaimSpec } from './claim-spec';
import type { ClaimObject } from './datavolume-controller';
import { importerPodName } from './importer-pod';

/** The claim a DataVolume makes, with CDI's labels and annotations, owned by the DataVolume. */
export function dataVolumeClaim(dv: DataVolume, spec: ClaimSpec): ClaimObject {
  const src = dv.spec.source ?? {};
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: dv.metadata?.name,
      namespace: dv.metadata?.namespace,
      labels: { [CdiLabels.app]: CdiLabels.appValue, ...(dv.metadata?.labels ?? {}) },
      annotations: {
        [CdiLabels.createdForDataVolume]: dv.metadata?.uid ?? '',
        // An upload's claim asks the upload controller for its pod (CDI's annotation).
        ...(src.upload ? { [UPLOAD_REQUEST_ANNOTATION]: '' } : {}),
        [CdiLabels.importSource]: src.http
          ? 'http'
          : src.registry
            ? 'registry'
            : src.upload
              ? 'upload'
              : 'none',
        [CdiLabels.contentType]: dv.spec.contentType || 'kubevirt',
        ...(src.http ? { [CdiLabels.importEndpoint]: src.http.url } : {}),
        ...(src.registry?.url
          ? {
              [CdiLabels.importEndpoint]: src.registry.url,
              [CdiLabels.registryImportMethod]: src.registry.pullMethod ?? 'pod',
            }
          : {}),
        [CdiLabels.importPodName]: importerPodName(dv.metadata?.name ?? ''),
      },
      ownerReferences: [controllerRef('cdi.kubevirt.io/v1beta1', 'DataVolume', dv)],
    },
    spec,
  };
}
