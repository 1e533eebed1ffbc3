/**
 * Defaulted VMIs for launcher tests: the tiny test guest (direct kernel boot from the
 * local image store's `kubevirt-ts/tiny-guest` image, no disks, no network, emulation),
 * and any other spec defaulted the same way.
 */
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { defaultVirtualMachineInstance } from '../../../src/api/defaults/vmi-defaults';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { KERNEL_CMDLINE } from '../../support/guest';

/**
 * A VMI `namespace/name` with `uid` and `spec`, defaulted as the API server would on a
 * cluster that allows emulation (amd64).
 */
export function defaultedLauncherVmi(
  namespace: string,
  name: string,
  uid: string,
  spec: VirtualMachineInstance['spec'],
): VirtualMachineInstance {
  return defaultVirtualMachineInstance(
    {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { namespace, name, uid },
      spec,
    },
    createClusterConfig({ developerConfiguration: { useEmulation: true } }, { hostArchitecture: 'amd64' }),
  );
}

/**
 * The tiny guest VMI `namespace/name` with `uid`, defaulted as the API server would;
 * `guest` sets `memory.guest` (and the request) instead of 128Mi (1Gi or more gets
 * memory hotplug headroom).
 */
export function tinyGuestLauncherVmi(
  namespace: string,
  name: string,
  uid: string,
  guest?: string,
): VirtualMachineInstance {
  return defaultedLauncherVmi(namespace, name, uid, {
    domain: {
      ...(guest ? { memory: { guest } } : {}),
      devices: { autoattachPodInterface: false },
      firmware: {
        kernelBoot: {
          kernelArgs: KERNEL_CMDLINE,
          container: { image: 'kubevirt-ts/tiny-guest', kernelPath: '/vmlinuz', initrdPath: '/initrd.img' },
        },
      },
      resources: { requests: { memory: guest ?? '128Mi' } },
    },
    terminationGracePeriodSeconds: 30,
  });
}
