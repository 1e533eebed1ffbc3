/**
 * Field support of a VirtualMachineSpec outside its template, and of the DataVolume specs
 * its `dataVolumeTemplates` carry: each leaf's covering test, or why validation refuses it.
 * Checked against the generated schema by test/api/audit/field-audit.test.ts.
 */
import type { FieldRegistry } from './registry-types';

const VM = 'test/controllers/virt-controller/vm/';
const CDI = 'test/controllers/cdi-controller/datavolume-embedded.test.ts';
const IMPORTER = 'test/controllers/cdi-importer/importer.test.ts';
const CLAIM = 'test/controllers/cdi-controller/claim-spec.test.ts';
const SECRET_HEADERS = 'test/controllers/cdi-importer/secret-headers.test.ts';
const CLONE = 'test/controllers/cdi-controller/clone-embedded.test.ts';
const UPLOAD = 'test/controllers/cdi-controller/upload-embedded.test.ts';
/** Refusals validateDataVolume makes by its own rules (src/api/cdi/validate-datavolume.ts). */
const DV_RULE = 'src/api/cdi/validate-datavolume.ts';
const CHECKPOINTS = 'multi-stage (checkpoint) imports are not supported';
const POPULATION = 'external population is not supported yet';
const LIMITS = 'storage limits are not written to the claim (only the size request is)';

/** A VirtualMachineSpec's fields outside `template` (whose spec is a VMI spec). */
export const vmFieldSupport: FieldRegistry = {
  'dataVolumeTemplates[*].apiVersion': { effect: `${VM}datavolume-templates-embedded.test.ts` },
  'dataVolumeTemplates[*].kind': { effect: `${VM}datavolume-templates-embedded.test.ts` },
  'dataVolumeTemplates[*].metadata.**': { effect: `${VM}datavolume-templates-embedded.test.ts` },
  'dataVolumeTemplates[*].status': {
    refused: "a DataVolume template's status is written by the DataVolume controller, not by the VM",
  },
  'instancetype.inferFromVolume': { effect: 'test/controllers/common/instancetype-infer.test.ts' },
  'instancetype.inferFromVolumeFailurePolicy': {
    effect: 'test/controllers/common/instancetype-infer.test.ts',
  },
  'instancetype.kind': { effect: `${VM}instancetype-embedded.test.ts` },
  'instancetype.name': { effect: `${VM}instancetype-embedded.test.ts` },
  'instancetype.revisionName': { effect: `${VM}instancetype-revisions.test.ts` },
  'preference.inferFromVolume': { effect: 'test/controllers/common/instancetype-infer.test.ts' },
  'preference.inferFromVolumeFailurePolicy': { effect: 'test/controllers/common/instancetype-infer.test.ts' },
  'preference.kind': { effect: `${VM}instancetype-embedded.test.ts` },
  'preference.name': { effect: `${VM}instancetype-embedded.test.ts` },
  'preference.revisionName': { effect: `${VM}instancetype-revisions.test.ts` },
  runStrategy: { effect: `${VM}run-strategies-embedded.test.ts` },
  running: { effect: `${VM}run-strategy.test.ts` },
  updateVolumesStrategy: {
    refused: 'volume migration is not implemented: volume changes are applied as Replacement',
    allowed: ['Replacement'],
  },
};

/** A DataVolumeSpec (a VM's `dataVolumeTemplates[*].spec`, or a DataVolume's `spec`). */
export const dataVolumeFieldSupport: FieldRegistry = {
  'checkpoints[*].**': { refused: CHECKPOINTS, rule: DV_RULE },
  contentType: {
    refused: 'contentType archive is not supported yet',
    allowed: ['kubevirt', ''],
    example: 'archive',
    rule: DV_RULE,
  },
  finalCheckpoint: { refused: CHECKPOINTS, allowed: [false], rule: DV_RULE },
  preallocation: { refused: 'preallocation is not supported yet', allowed: [false], rule: DV_RULE },
  priorityClassName: { effect: CLAIM },
  'pvc.accessModes[*]': { effect: CDI },
  'pvc.dataSource.**': { refused: POPULATION, rule: DV_RULE },
  'pvc.dataSourceRef.**': { refused: POPULATION, rule: DV_RULE },
  'pvc.resources.limits.*': { refused: LIMITS },
  'pvc.resources.requests.*': { effect: CDI },
  'pvc.selector.**': { effect: CLAIM },
  'pvc.storageClassName': { effect: CDI },
  'pvc.volumeAttributesClassName': { refused: 'volume attributes classes are not written to the claim' },
  'pvc.volumeMode': { effect: CDI },
  'pvc.volumeName': { effect: CLAIM },
  'source.blank': { effect: CDI },
  'source.gcs.**': { refused: 'GCS sources are not supported (no outside network here)', rule: DV_RULE },
  'source.http.certConfigMap': { effect: CDI },
  'source.http.extraHeaders[*]': { effect: IMPORTER },
  'source.http.secretExtraHeaders[*]': { effect: SECRET_HEADERS },
  'source.http.secretRef': { effect: CDI },
  'source.http.url': { effect: CDI },
  'source.imageio.**': { refused: 'oVirt imageio sources are not supported', rule: DV_RULE },
  'source.pvc.name': { effect: CLONE },
  'source.pvc.namespace': { effect: CLONE },
  'source.registry.certConfigMap': {
    refused:
      "registry certificates are not supported: the image is pulled by the node's container runtime (use the node's registry configuration)",
    rule: DV_RULE,
  },
  'source.registry.imageStream': {
    refused: 'imageStream (OpenShift image streams) is not supported',
    rule: DV_RULE,
  },
  'source.registry.platform.**': {
    refused: 'platform selection is not supported: the node pulls the image for its own architecture',
    rule: DV_RULE,
  },
  'source.registry.pullMethod': { effect: CDI },
  'source.registry.secretRef': {
    refused:
      "registry credentials are not supported: the image is pulled by the node's container runtime (use the node's pull configuration)",
    rule: DV_RULE,
  },
  'source.registry.url': { effect: CDI },
  'source.s3.**': { refused: 'S3 sources are not supported (no outside network here)', rule: DV_RULE },
  'source.snapshot.name': { effect: CLONE },
  'source.snapshot.namespace': { effect: CLONE },
  'source.upload': { effect: UPLOAD },
  'source.vddk.**': { refused: 'VDDK (VMware) sources are not supported', rule: DV_RULE },
  'sourceRef.kind': { effect: CLONE },
  'sourceRef.name': { effect: CLONE },
  'sourceRef.namespace': { effect: CLONE },
  'storage.accessModes[*]': { effect: CDI },
  'storage.dataSource.**': { refused: POPULATION, rule: DV_RULE },
  'storage.dataSourceRef.**': { refused: POPULATION, rule: DV_RULE },
  'storage.resources.limits.*': { refused: LIMITS },
  'storage.resources.requests.*': { effect: CDI },
  'storage.selector.**': { effect: CLAIM },
  'storage.storageClassName': { effect: CDI },
  'storage.volumeMode': { effect: CDI },
  'storage.volumeName': { effect: CLAIM },
};
