/**
 * The tiny test guest as a defaulted VMI for launcher tests: direct kernel boot from the
 * local image store's `kubevirt-ts/tiny-guest` image, no disks, no network, emulation.
 */
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { defaultVirtualMachineInstance } from '../../../src/api/defaults/vmi-defaults';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { KERNEL_CMDLINE } from '../../support/guest';

/** The tiny guest VMI `namespace/name` with `uid`, defaulted as the API server would. */
export function tinyGuestLauncherVmi(namespace: string, name: string, uid: string): VirtualMachineInstance {
  const vmi: VirtualMachineInstance = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { namespace, name, uid },
    spec: {
      domain: {
        devices: { autoattachPodInterface: false },
        firmware: {
          kernelBoot: {
            kernelArgs: KERNEL_CMDLINE,
            container: { image: 'kubevirt-ts/tiny-guest', kernelPath: '/vmlinuz', initrdPath: '/initrd.img' },
          },
        },
        resources: { requests: { memory: '128Mi' } },
      },
      terminationGracePeriodSeconds: 30,
    },
  };
  return defaultVirtualMachineInstance(
    vmi,
    createClusterConfig({ developerConfiguration: { useEmulation: true } }, { hostArchitecture: 'amd64' }),
  );
}
