/**
 * The seccomp profile of launcher pods. Upstream (template.go) takes it from the KubeVirt
 * CR's `seccompConfiguration.virtualMachineInstanceProfile.customProfile`: a
 * `localhostProfile` or `runtimeDefaultProfile`; with neither, upstream sets none and the
 * pod runs unconfined unless the kubelet's SeccompDefault is on.
 *
 * kubevirt-ts confines launchers when the CR names nothing too: with the
 * KubevirtSeccompProfile gate on (Beta, so on unless disabled) it uses upstream's own
 * profile, `localhost/kubevirt/kubevirt.json`, which every virt-handler installs in its
 * kubelet's seccomp directory (../../virt-handler/seccomp) before it marks its node
 * `kubevirt.io/schedulable`, the label every launcher pod selects, so the file is there
 * wherever the pod lands. With the gate off: the container runtime's `RuntimeDefault`,
 * which is stricter (containerd's refuses unshare and namespace clones without
 * CAP_SYS_ADMIN, which the passt binding's sandbox needs).
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import { FeatureGate } from '../../../api/config/feature-gates';
import type { SeccompProfile } from '../../common/pod';

/** The profile upstream's virt-handler installs: `localhost/kubevirt/kubevirt.json`. */
export const KUBEVIRT_SECCOMP_PROFILE = 'kubevirt/kubevirt.json';

/** The launcher pod's seccomp profile under `config`. */
export function launcherSeccompProfile(config: ClusterConfig): SeccompProfile {
  const custom = config.configuration.seccompConfiguration?.virtualMachineInstanceProfile?.customProfile;
  if (custom?.localhostProfile) return { type: 'Localhost', localhostProfile: custom.localhostProfile };
  if (custom?.runtimeDefaultProfile) return { type: 'RuntimeDefault' };
  if (config.isFeatureGateEnabled(FeatureGate.KubevirtSeccompProfile))
    return { type: 'Localhost', localhostProfile: KUBEVIRT_SECCOMP_PROFILE };
  return { type: 'RuntimeDefault' };
}
