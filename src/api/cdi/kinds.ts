/**
 * The cdi.kubevirt.io kinds kubevirt-ts serves (as upstream CDI registers them, from the
 * kubebuilder markers of its api/core/v1beta1/types.go): their CRDs are generated into
 * crds/ by scripts/gen-cdi-api.ts and installed with KubeVirt's.
 */
import type { KindInfo } from '../kind-info';

/** CDI's API group. */
export const CDI_GROUP = 'cdi.kubevirt.io';
/** The group of UploadTokenRequest (an aggregated API upstream, not a CRD). */
export const CDI_UPLOAD_GROUP = 'upload.cdi.kubevirt.io';

/** A CDI kind: a kind-registry entry whose type lives in ../generated/cdi/types. */
export type CdiKindInfo = Omit<KindInfo, 'typeName'> & { typeName: string };

const v1beta1 = [{ name: 'v1beta1', served: true, storage: true }] as const;

function cdiKind(
  kind: string,
  plural: string,
  namespaced: boolean,
  extra: Partial<Pick<CdiKindInfo, 'shortNames' | 'categories' | 'printerColumns'>> = {},
): CdiKindInfo {
  return {
    group: CDI_GROUP,
    kind,
    plural,
    singular: kind.toLowerCase(),
    shortNames: extra.shortNames ?? [],
    categories: extra.categories ?? [],
    namespaced,
    version: 'v1beta1',
    versions: v1beta1,
    definition: `v1beta1.${kind}`,
    typeName: kind,
    subresources: { status: true },
    printerColumns: extra.printerColumns ?? [],
    crdLabels: { 'cdi.kubevirt.io': '' },
  };
}

/** DataVolume, DataSource, StorageProfile and CDIConfig. */
export const cdiKinds: readonly CdiKindInfo[] = [
  cdiKind('DataVolume', 'datavolumes', true, {
    shortNames: ['dv', 'dvs'],
    categories: ['all'],
    printerColumns: [
      {
        name: 'Phase',
        type: 'string',
        jsonPath: '.status.phase',
        description: 'The phase the data volume is in',
      },
      {
        name: 'Progress',
        type: 'string',
        jsonPath: '.status.progress',
        description: 'Transfer progress in percentage if known, N/A otherwise',
      },
      {
        name: 'Restarts',
        type: 'integer',
        jsonPath: '.status.restartCount',
        description: 'The number of times the transfer has been restarted.',
      },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
    ],
  }),
  cdiKind('DataSource', 'datasources', true, { shortNames: ['das'], categories: ['all'] }),
  cdiKind('StorageProfile', 'storageprofiles', false),
  cdiKind('CDIConfig', 'cdiconfigs', false),
];
