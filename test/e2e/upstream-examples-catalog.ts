/**
 * Which of upstream KubeVirt's examples upstream-examples-local.test.ts boots in local mode,
 * which it cannot and why, what the instance type examples give their VMs, and the small
 * echo client it runs in a peer pod.
 */
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import type { ApiObject } from '../../src/api/validation/admission';

/** Upstream examples that cannot boot here, and why (checked against the examples folder). */
export const NOT_HERE: Record<string, string> = {
  'vm-alpine-datavolume.yaml':
    'its DataVolume names storageClassName `local`, a class local mode does not have (its own is kubevirt-ts-local), so the claim stays Pending as on any cluster without it: datavolume-local.test.ts boots DataVolume VMs',
  'vm-alpine-multipvc.yaml': 'disks on pre-provisioned PersistentVolumeClaims the example does not ship',
  'vmi-pvc.yaml': 'a disk on a pre-provisioned PersistentVolumeClaim the example does not ship',
  'vm-windows-clarge-windows.yaml': 'a Windows disk on a PersistentVolumeClaim, and an instancetype',
  'vmi-windows.yaml':
    'a Windows disk on a PersistentVolumeClaim (and an e1000 NIC the tiny guest has no driver for)',
  'vm-cirros-clarge-windows.yaml':
    "its preference (windows.yaml) asks for EFI with secure boot, SMM and a TPM, and an e1000 NIC: the tiny guest's disk boots by BIOS only (and has no e1000 driver)",
  'vmi-alpine-efi.yaml': "EFI boot: the tiny guest's disk boots by BIOS (syslinux) only",
  'vmi-secureboot.yaml': "secure boot: the tiny guest's disk boots by BIOS (syslinux) only",
  'vmi-gpu.yaml': 'a GPU host device this machine does not have',
  'vmi-dra-pgpu.yaml': 'a DRA GPU claim (feature gate GPUsWithDRA, and no GPU here)',
  'vmi-usb.yaml': 'a USB host device (feature gate HostDevices, and no such device here)',
  'vmi-sriov.yaml': 'an SR-IOV network: no SR-IOV device here',
  'vmi-host-disk.yaml': 'a hostDisk (feature gate HostDisk off by default, as upstream)',
  'vmi-fedora-isolated.yaml': 'dedicated CPUs with an isolated emulator thread: needs a CPU-manager node',
  'vmi-with-sidecar-hook.yaml': "a hook sidecar (feature gate Sidecar) whose image can't be pulled here",
  'vmi-with-sidecar-hook-configmap.yaml':
    "a hook sidecar (feature gate Sidecar) whose image can't be pulled here",
  'vm-cirros-with-sidecar-hook-configmap.yaml':
    "a hook sidecar (feature gate Sidecar) whose image can't be pulled here",
  'vmi-multus-ptp.yaml': 'not default networking (Multus only): test/e2e/network-secondary-local.test.ts',
  'vmi-multus-multiple-net.yaml':
    'not default networking (a Multus network too): test/e2e/network-secondary-local.test.ts',
};

/** The examples that boot here: VMs, VMIs and a ReplicaSet with default networking. */
export const ALL_BOOTS = [
  'vm-cirros.yaml',
  'vm-cirros-sata.yaml',
  'vm-pool-cirros.yaml',
  'vm-priorityclass.yaml',
  'vmi-arm.yaml',
  'vmi-ephemeral.yaml',
  'vmi-fedora.yaml',
  'vmi-kernel-boot.yaml',
  'vmi-masquerade.yaml',
  'vmi-migratable.yaml',
  'vmi-nocloud.yaml',
  'vmi-replicaset-cirros.yaml',
  'vmi-sata.yaml',
];

/**
 * The instance type examples: what each VM's instance type gives it. Upstream's admitter
 * refuses each unchanged (its template's memory.guest conflicts with the instance type);
 * they boot with that field removed.
 */
export const INSTANCETYPE_VMS: Record<string, { cpus: number; memory: string }> = {
  'vm-cirros-csmall.yaml': { cpus: 1, memory: '128Mi' },
  'vm-cirros-cluster-csmall.yaml': { cpus: 1, memory: '128Mi' },
  'vm-cirros-clarge.yaml': { cpus: 4, memory: '2Gi' },
  'vm-cirros-clarge-virtio.yaml': { cpus: 4, memory: '2Gi' },
};
/** Upstream's instance types and preferences those VMs name, applied unchanged. */
export const INSTANCETYPE_MANIFESTS = ['csmall.yaml', 'cluster-csmall.yaml', 'clarge.yaml', 'virtio.yaml'];

/** Upstream's containerDisk images, each given the tiny guest's bootable disk here. */
export const DISK_IMAGES = [
  'registry:5000/kubevirt/cirros-container-disk-demo:devel',
  'registry:5000/kubevirt/alpine-container-disk-demo:devel',
  'registry:5000/kubevirt/fedora-with-test-tooling-container-disk:devel',
];
export const KERNEL_IMAGE = 'registry:5000/kubevirt/alpine-ext-kernel-boot-demo:devel';

// KVTS_UPSTREAM_EXAMPLE=vmi-sata.yaml runs one example alone (for a developer's look).
const only = (files: string[]) =>
  process.env.KVTS_UPSTREAM_EXAMPLE ? files.filter((f) => f === process.env.KVTS_UPSTREAM_EXAMPLE) : files;
export const BOOTS = only(ALL_BOOTS);
export const TYPED_BOOTS = only(Object.keys(INSTANCETYPE_VMS));

/** Sends N bytes to host:port, prints `echoed <n>` and, when short, what did come back. */
export const ECHO_PEEK = `const [h,p,n]=process.argv.slice(1);const c=require('net').connect(+p,h,()=>c.end(Buffer.alloc(+n,1)));const got=[];c.on('data',d=>got.push(d));c.on('close',()=>{const b=Buffer.concat(got);console.log('echoed '+b.length+(b.length<+n?' '+JSON.stringify(b.toString('latin1').slice(0,120)):''))});c.on('error',e=>console.log('error '+e.message))`;

/** The VMI spec an example's object carries (its template's for a VM or ReplicaSet). */
export function vmiSpecOf(o: ApiObject): VirtualMachineInstance['spec'] | undefined {
  const spec = o.spec as
    | (VirtualMachineInstance['spec'] & { template?: { spec?: VirtualMachineInstance['spec'] } })
    | undefined;
  return o.kind === 'VirtualMachineInstance' ? spec : spec?.template?.spec;
}
