/** VMI admission rules: probes and start strategy, firmware, features and security, devices behind feature gates (the cases' shape and check: vmi-rule-case.ts). */
import { describe, it } from 'vitest';
import { expectVmiRuleError, type VmiRuleCase } from './vmi-rule-case';

const cases: VmiRuleCase[] = [
  // Probes and start strategy
  {
    name: 'probe with two handlers',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.readinessProbe = { guestAgentPing: {}, tcpSocket: { port: 22 } };
    },
    path: 'spec.readinessProbe',
    message: 'spec.readinessProbe must have exactly one probe type set',
  },
  {
    name: 'probe with no handler',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.livenessProbe = { initialDelaySeconds: 10 };
    },
    path: 'spec.livenessProbe',
    message:
      'either spec.livenessProbe.tcpSocket, spec.livenessProbe.exec or spec.livenessProbe.httpGet must be set if a spec.livenessProbe is specified',
  },
  {
    name: 'HTTP probe without a pod network',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.readinessProbe = { httpGet: { port: 80 } };
    },
    path: 'spec.readinessProbe.httpGet',
    message: 'spec.readinessProbe.httpGet is only allowed if the Pod Network is attached',
  },
  {
    name: 'liveness probe with a success threshold above 1 (the pod would be refused)',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.livenessProbe = { tcpSocket: { port: 22 }, successThreshold: 2 };
    },
    path: 'spec.livenessProbe.successThreshold',
    message: 'spec.livenessProbe.successThreshold must be 1',
  },
  {
    name: 'unknown start strategy',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.startStrategy = 'Later';
    },
    path: 'spec.startStrategy',
    message: 'spec.startStrategy is set with an unrecognized option: Later',
  },
  {
    name: 'paused start with a liveness probe',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.startStrategy = 'Paused';
      v.spec.livenessProbe = { guestAgentPing: {} };
    },
    path: 'spec.startStrategy',
    message:
      'either spec.startStrategy or spec.livenessProbe should be provided.Pausing VMI with LivenessProbe is not supported',
  },
  {
    name: 'unknown eviction strategy',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.evictionStrategy = 'Pray';
    },
    path: 'spec.evictionStrategy',
    message: 'spec.evictionStrategy is set with an unrecognized option: Pray',
  },
  // Firmware, features, security
  {
    name: 'SecureBoot without SMM',
    file: 'vmi-secureboot.yaml',
    mutate: (v) => {
      delete v.spec.domain.features!.smm;
    },
    path: 'spec.domain',
    message: 'spec.domain has EFI SecureBoot enabled. SecureBoot requires SMM, which is currently disabled.',
  },
  {
    name: 'SecureBoot with SMM disabled',
    file: 'vmi-secureboot.yaml',
    mutate: (v) => {
      v.spec.domain.features!.smm = { enabled: false };
    },
    path: 'spec.domain',
    message: 'spec.domain has EFI SecureBoot enabled. SecureBoot requires SMM, which is currently disabled.',
  },
  {
    name: 'EFI and BIOS together',
    file: 'vmi-efi.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.bootloader!.bios = {};
    },
    path: 'spec.domain.firmware.bootloader',
    message:
      'spec.domain.firmware.bootloader has both EFI and BIOS configured, but they are mutually exclusive.',
  },
  {
    name: 'firmware serial with forbidden characters',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.firmware = { serial: 'serial#1' };
    },
    path: 'spec.domain.firmware.serial',
    message:
      'spec.domain.firmware.serial must be made up of the following characters [A-Za-z0-9_.+-], if specified',
  },
  {
    name: 'kernel boot without an image',
    file: 'vmi-kernel-boot.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.kernelBoot!.container!.image = '';
    },
    path: 'spec.domain.firmware.kernelBoot.container.image',
    message: 'spec.domain.firmware.kernelBoot.container must be defined with an image',
  },
  {
    name: 'kernel boot with a relative kernel path',
    file: 'vmi-kernel-boot.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.kernelBoot!.container!.kernelPath = 'boot/vmlinuz-virt';
    },
    path: 'spec.domain.firmware.kernelBoot.container.kernelPath',
    message:
      'spec.domain.firmware.kernelBoot.container.kernelPath must be an absolute path to a file without relative components',
  },
  {
    name: 'kernel args without a kernel',
    file: 'vmi-kernel-boot.yaml',
    mutate: (v) => {
      delete v.spec.domain.firmware!.kernelBoot!.container;
      v.spec.volumes = [
        {
          name: 'containerdisk',
          containerDisk: { image: 'quay.io/kubevirt/cirros-container-disk-demo:v1.5.0' },
        },
      ];
    },
    path: 'spec.domain.firmware.kernelBoot.kernelArgs',
    message: 'kernel arguments cannot be provided without an external kernel',
  },
  {
    name: 'Hyper-V feature whose requirement is disabled',
    file: 'vmi-windows.yaml',
    mutate: (v) => {
      v.spec.domain.features!.hyperv!.synic = { enabled: true };
      v.spec.domain.features!.hyperv!.vpindex = { enabled: false };
    },
    path: 'spec.domain.features.hyperv.synic',
    message:
      "'spec.domain.features.hyperv.synic' requires 'spec.domain.features.hyperv.vpindex', which was disabled.",
  },
  {
    name: 'launchSecurity without the gate',
    file: 'vmi-efi.yaml',
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {} };
    },
    path: 'spec.launchSecurity',
    message: 'WorkloadEncryptionSEV feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'two launchSecurity types',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {}, snp: {} };
    },
    path: 'spec.launchSecurity',
    message: 'One and only one launchSecurity type can be set',
  },
  {
    name: 'SEV without EFI',
    file: 'vmi-containerdisk.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {} };
    },
    path: 'spec.launchSecurity',
    message: 'SEV requires OVMF (UEFI)',
  },
  {
    name: 'SNP with SecureBoot',
    file: 'vmi-secureboot.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { snp: {} };
    },
    path: 'spec.launchSecurity',
    message: 'SNP does not work along with SecureBoot',
  },
  {
    name: 'SNP with persistent EFI variables',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { snp: {} };
      v.spec.domain.firmware!.bootloader!.efi!.persistent = true;
    },
    path: 'spec.launchSecurity',
    message: 'SNP does not work along with Persistent EFI variables',
  },
  {
    name: 'SEV attestation without a paused start',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: { attestation: {} } };
    },
    path: 'spec.launchSecurity',
    message: "SEV attestation requires VMI StartStrategy 'Paused'",
  },
  {
    name: 'SEV with a bootable NIC',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {} };
      v.spec.domain.devices.interfaces = [{ name: 'default', masquerade: {}, bootOrder: 2 }];
      v.spec.networks = [{ name: 'default', pod: {} }];
    },
    path: 'spec.launchSecurity',
    message: 'SEV does not work with bootable NICs: default',
  },
  // Devices behind feature gates
  {
    name: 'host devices without the gate',
    file: 'vmi-hostdevice.yaml',
    mutate: () => {},
    path: 'spec.HostDevices',
    message: 'Host Devices feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'DRA GPU without the gate',
    file: 'vmi-gpu-dra.yaml',
    mutate: () => {},
    path: 'spec.domain.devices.gpus[0]',
    message: 'GPUsWithDRA feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'DRA GPU naming an unknown claim',
    file: 'vmi-gpu-dra.yaml',
    gates: ['GPUsWithDRA'],
    mutate: (v) => {
      v.spec.domain.devices.gpus![0].claimName = 'missing-claim';
    },
    path: 'spec.domain.devices.gpus[0].claimName',
    message: "spec.domain.devices.gpus[0].claimName 'missing-claim' not found in spec.resourceClaims.",
  },
  {
    name: 'VSOCK without the gate',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.autoattachVSOCK = true;
    },
    path: 'spec.domain.devices.autoattachVSOCK',
    message: 'VSOCK feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'downward metrics device without the gate',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.downwardMetrics = {};
    },
    path: 'spec.domain.devices.downwardMetrics',
    message: 'downwardMetrics virtio serial is not allowed: DownwardMetrics feature gate is not enabled',
  },
  {
    name: 'input device with a PS/2 bus',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.inputs = [{ name: 'tablet', type: 'tablet', bus: 'ps2' }];
    },
    path: 'spec.domain.devices.inputs[0].bus',
    message: 'Input device can have only virtio or usb bus.',
  },
  {
    name: 'input device that is a keyboard',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.inputs = [{ name: 'kbd', type: 'keyboard', bus: 'usb' }];
    },
    path: 'spec.domain.devices.inputs[0].type',
    message: 'Input device can have only tablet type.',
  },
  {
    name: 'sound device model',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.sound = { name: 'audio', model: 'sb16' };
    },
    path: 'spec.Sound',
    message: "Sound device type is not supported. Options: 'ich9' or 'ac97'",
  },
  {
    name: 'invalid IO threads policy',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.ioThreadsPolicy = 'dedicated';
    },
    path: 'spec.domain.ioThreadsPolicy',
    message: 'Invalid IOThreadsPolicy (dedicated)',
  },
  {
    name: 'DNS policy None without a config',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.dnsPolicy = 'None';
    },
    path: 'spec.dnsConfig',
    message: 'must provide `dnsConfig` when `dnsPolicy` is None',
  },
  {
    name: 'DNS nameserver that is not an IP',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.dnsConfig = { nameservers: ['dns.example.com'] };
    },
    path: 'spec.dnsConfig.nameservers',
    message: 'must be valid IP address: dns.example.com',
  },
  {
    name: 'access credential without a type',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.accessCredentials = [{}];
    },
    path: 'spec.accessCredentials[0]',
    message: 'spec.accessCredentials[0] must have exactly one access credential type set',
  },
  {
    name: 'SSH key through configDrive without such a volume',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.accessCredentials = [
        {
          sshPublicKey: {
            source: { secret: { secretName: 'keys' } },
            propagationMethod: { configDrive: {} },
          },
        },
      ];
    },
    path: 'spec.accessCredentials[0].sshPublicKey.propagationMethod',
    message:
      'spec.accessCredentials[0] requires a configDrive volume to exist when the configDrive propagationMethod is in use.',
  },
  {
    name: 'Hyper-V features together with Hyper-V passthrough',
    file: 'vmi-windows.yaml',
    mutate: (v) => {
      v.spec.domain.features!.hypervPassthrough = { enabled: true };
    },
    path: 'spec.domain.features.hyperv',
    message:
      'Cannot explicitly set hyperV features if HypervPassthrough is being used. Please use either HyperV or HypervPassthrough.',
  },
];

describe('VMI validation rules on mutated fixture manifests: probes, firmware and devices', () => {
  it.each(cases)('$name ($file)', expectVmiRuleError);
});
