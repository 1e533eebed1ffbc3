/** Labels and annotations the DataVolume controller puts on its PVCs and pods (CDI's names). */
export const CdiLabels = {
  app: 'app',
  appValue: 'containerized-data-importer',
  component: 'cdi.kubevirt.io',
  /** The DataVolume's uid, on the objects made for it. */
  createdForDataVolume: 'cdi.kubevirt.io/createdForDataVolume',
  /** The importer pod's phase, mirrored on the PVC. */
  podPhase: 'cdi.kubevirt.io/storage.pod.phase',
  importPodName: 'cdi.kubevirt.io/storage.import.importPodName',
  importEndpoint: 'cdi.kubevirt.io/storage.import.endpoint',
  importSource: 'cdi.kubevirt.io/storage.import.source',
  contentType: 'cdi.kubevirt.io/storage.contentType',
  registryImportMethod: 'cdi.kubevirt.io/storage.import.registryImportMethod',
  /** A claim already filled for the named DataVolume (a VM restore's): adopted, no import. */
  populatedFor: 'cdi.kubevirt.io/storage.populatedFor',
} as const;
