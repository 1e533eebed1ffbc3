/**
 * Field support of a VirtualMachineInstanceSpec outside `domain`: each leaf's covering
 * test, or why validation refuses it. Checked against the generated schema by
 * test/api/audit/field-audit.test.ts.
 */
import type { FieldRegistry } from './registry-types';

const DRA = 'dynamic resource allocation (DRA) is not implemented: the launcher pod gets no resource claims';
const PULL =
  'the launcher pod gets no imagePullSecrets yet: use an image the node can pull without credentials';

/** A VirtualMachineInstanceSpec's fields outside `domain`. */
export const vmiSpecFieldSupport: FieldRegistry = {
  'accessCredentials[*].sshPublicKey.propagationMethod.configDrive': {
    effect: 'test/controllers/virt-launcher/access-credential-keys.test.ts',
  },
  'accessCredentials[*].sshPublicKey.propagationMethod.noCloud': {
    effect: 'test/controllers/virt-launcher/access-credential-keys.test.ts',
  },
  'accessCredentials[*].sshPublicKey.propagationMethod.qemuGuestAgent.users[*]': {
    effect: 'test/controllers/virt-launcher/launcher-agent-credentials.test.ts',
  },
  'accessCredentials[*].sshPublicKey.source.secret.secretName': {
    effect: 'test/controllers/virt-launcher/launcher-agent-credentials.test.ts',
  },
  'accessCredentials[*].userPassword.propagationMethod.qemuGuestAgent': {
    effect: 'test/controllers/virt-launcher/launcher-agent-credentials.test.ts',
  },
  'accessCredentials[*].userPassword.source.secret.secretName': {
    effect: 'test/controllers/virt-launcher/launcher-agent-credentials.test.ts',
  },
  'affinity.**': { effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts' },
  architecture: { effect: 'test/converter/configurators/compute.test.ts' },
  'dnsConfig.**': { effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts' },
  dnsPolicy: { effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts' },
  evictionStrategy: { effect: 'test/controllers/virt-controller/evacuation/controller.test.ts' },
  hostname: { effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts' },
  'livenessProbe.exec.command[*]': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.failureThreshold': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.guestAgentPing': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.httpGet.**': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.tcpSocket.**': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.initialDelaySeconds': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.periodSeconds': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.successThreshold': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'livenessProbe.timeoutSeconds': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'networks[*].multus.default': { effect: 'test/converter/configurators/interfaces.test.ts' },
  'networks[*].multus.networkName': { effect: 'test/converter/configurators/interfaces.test.ts' },
  'networks[*].name': { effect: 'test/converter/configurators/interfaces.test.ts' },
  'networks[*].pod.vmIPv6NetworkCIDR': { refused: 'the masquerade binding has no IPv6 network to configure' },
  'networks[*].pod.vmNetworkCIDR': { refused: 'the masquerade binding uses the fixed 10.0.2.0/24 network' },
  'networks[*].resourceClaim.**': { refused: DRA },
  'nodeSelector.*': { effect: 'test/controllers/virt-controller/services/pod-renderer.test.ts' },
  priorityClassName: { effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts' },
  'readinessProbe.exec.command[*]': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.failureThreshold': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.guestAgentPing': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.httpGet.**': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.tcpSocket.**': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.initialDelaySeconds': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.periodSeconds': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.successThreshold': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'readinessProbe.timeoutSeconds': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-probes.test.ts',
  },
  'resourceClaims[*].**': { refused: DRA },
  schedulerName: { effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts' },
  serviceAccountName: {
    refused:
      "the launcher pod's service account comes from a serviceAccount volume; this field is not applied yet",
  },
  startStrategy: { effect: 'test/converter/configurators/compute.test.ts' },
  subdomain: { effect: 'test/controllers/virt-controller/services/pod-renderer.test.ts' },
  terminationGracePeriodSeconds: { effect: 'test/controllers/virt-controller/services/pod-renderer.test.ts' },
  'tolerations[*].**': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts',
  },
  'topologySpreadConstraints[*].**': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-scheduling.test.ts',
  },
  'utilityVolumes[*].**': { refused: 'utility volumes are not implemented' },
  'volumes[*].cloudInitConfigDrive.networkData': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitConfigDrive.networkDataBase64': { effect: 'test/converter/iso/iso.test.ts' },
  'volumes[*].cloudInitConfigDrive.networkDataSecretRef.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitConfigDrive.secretRef.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitConfigDrive.userData': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitConfigDrive.userDataBase64': { effect: 'test/converter/iso/iso.test.ts' },
  'volumes[*].cloudInitNoCloud.networkData': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitNoCloud.networkDataBase64': { effect: 'test/converter/iso/iso.test.ts' },
  'volumes[*].cloudInitNoCloud.networkDataSecretRef.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitNoCloud.secretRef.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitNoCloud.userData': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].cloudInitNoCloud.userDataBase64': { effect: 'test/converter/iso/iso.test.ts' },
  'volumes[*].configMap.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].configMap.optional': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].configMap.volumeLabel': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].containerDisk.image': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-container-disks.test.ts',
  },
  'volumes[*].containerDisk.imagePullPolicy': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-container-disks.test.ts',
  },
  'volumes[*].containerDisk.imagePullSecret': { refused: PULL },
  'volumes[*].containerDisk.path': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].containerPath.**': { refused: 'containerPath volumes are not implemented' },
  'volumes[*].dataVolume.hotpluggable': { effect: 'test/converter/configurators/disks-hotplug.test.ts' },
  'volumes[*].dataVolume.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].downwardAPI.fields[*].**': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].downwardAPI.volumeLabel': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].downwardMetrics': {
    effect: 'test/controllers/virt-controller/services/memory-overhead.test.ts',
  },
  'volumes[*].emptyDisk.capacity': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].ephemeral.**': {
    refused:
      'ephemeral (copy-on-write over a PVC) volumes are not prepared yet: the launcher pod does not mount the claim nor create the overlay',
  },
  'volumes[*].hostDisk.capacity': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].hostDisk.path': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].hostDisk.shared': { effect: 'test/controllers/virt-handler/live-migratable.test.ts' },
  'volumes[*].hostDisk.type': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  // Set by the VM controller for `virtctl memory-dump` (the VM's memorydump subresource).
  'volumes[*].memoryDump.claimName': {
    effect: 'test/controllers/virt-controller/vm/memory-dump.test.ts',
  },
  'volumes[*].memoryDump.hotpluggable': {
    effect: 'test/controllers/virt-controller/vm/memory-dump.test.ts',
  },
  'volumes[*].memoryDump.readOnly': {
    refused: 'a memory dump volume receives the dump: it cannot be read-only',
    allowed: [false],
  },
  'volumes[*].name': { effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts' },
  'volumes[*].persistentVolumeClaim.claimName': {
    effect: 'test/controllers/virt-controller/services/claim-volumes.test.ts',
  },
  'volumes[*].persistentVolumeClaim.hotpluggable': {
    effect: 'test/converter/configurators/disks-hotplug.test.ts',
  },
  'volumes[*].persistentVolumeClaim.readOnly': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].secret.optional': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].secret.secretName': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].secret.volumeLabel': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].serviceAccount.serviceAccountName': {
    effect: 'test/controllers/virt-launcher/volume-kinds.test.ts',
  },
  'volumes[*].sysprep.configMap.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
  'volumes[*].sysprep.secret.name': {
    effect: 'test/controllers/virt-controller/services/pod-renderer-volumes.test.ts',
  },
};
