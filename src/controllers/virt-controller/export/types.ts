/** The export.kubevirt.io kind (KubeVirt's CRD; v1 is its storage version, v1beta1 is served too). */
import { resourceType } from '../../runtime/resources';

export const VirtualMachineExportType = resourceType(
  'export.kubevirt.io',
  'v1',
  'VirtualMachineExport',
  'virtualmachineexports',
  true,
  true,
);
