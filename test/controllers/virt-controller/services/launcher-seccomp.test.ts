/**
 * Launcher pods run under a seccomp profile: upstream's kubevirt/kubevirt.json (installed
 * by every virt-handler) while the KubevirtSeccompProfile gate is on, the runtime's default
 * with it off, or what the KubeVirt CR names; the CR's seccompConfiguration is validated as
 * upstream's operator webhook does.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import { validateKubeVirtConfiguration } from '../../../../src/api/config/validate-configuration';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { renderLauncherPod } from '../../../../src/controllers/virt-controller/services/pod-renderer';

const vmi = (runtimeUser?: number): VirtualMachineInstance => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'v', namespace: 'default', uid: 'u-1' },
  spec: { domain: { resources: { requests: { memory: '64Mi' } }, devices: {} } },
  status: runtimeUser === undefined ? {} : { runtimeUser },
});
const opts = { launcherImage: 'l:dev', podRuntime: 'kubelet' as const };

describe('launcher pod seccomp profile', () => {
  it("is upstream's kubevirt/kubevirt.json by default, RuntimeDefault with the gate off, for root and non-root launchers", () => {
    const gateOff = createClusterConfig({
      developerConfiguration: { disabledFeatureGates: ['KubevirtSeccompProfile'] },
    });
    for (const user of [undefined, 107]) {
      const pod = renderLauncherPod(vmi(user), createClusterConfig({}), opts);
      expect(pod.spec?.securityContext?.seccompProfile).toEqual({
        type: 'Localhost',
        localhostProfile: 'kubevirt/kubevirt.json',
      });
      expect(renderLauncherPod(vmi(user), gateOff, opts).spec?.securityContext?.seccompProfile).toEqual({
        type: 'RuntimeDefault',
      });
    }
  });

  it("is the KubeVirt CR's profile when it names one", () => {
    const config = createClusterConfig({
      seccompConfiguration: {
        virtualMachineInstanceProfile: { customProfile: { localhostProfile: 'site/launcher.json' } },
      },
    });
    expect(renderLauncherPod(vmi(107), config, opts).spec?.securityContext).toEqual({
      fsGroup: 107,
      runAsUser: 107,
      runAsGroup: 107,
      runAsNonRoot: true,
      seccompProfile: { type: 'Localhost', localhostProfile: 'site/launcher.json' },
    });
    const rd = createClusterConfig({
      seccompConfiguration: {
        virtualMachineInstanceProfile: { customProfile: { runtimeDefaultProfile: true } },
      },
    });
    expect(renderLauncherPod(vmi(), rd, opts).spec?.securityContext?.seccompProfile).toEqual({
      type: 'RuntimeDefault',
    });
  });

  it('refuses a configuration naming no profile, both kinds, or a path leaving the seccomp directory', () => {
    const msgs = (customProfile: unknown) =>
      validateKubeVirtConfiguration({
        seccompConfiguration: { virtualMachineInstanceProfile: { customProfile } as never },
      }).map((e) => `${e.path}: ${e.message}`);
    const base = 'spec.configuration.seccompConfiguration.virtualMachineInstanceProfile.customProfile';
    expect(msgs(undefined)).toEqual([`${base}: ${base} needs to be set`]);
    expect(msgs({ localhostProfile: 'kubevirt/kubevirt.json', runtimeDefaultProfile: true })).toEqual([
      `${base}.localhostProfile: ${base}.localhostProfile cannot be set when ${base}.runtimeDefaultProfile is set`,
      `${base}.runtimeDefaultProfile: ${base}.runtimeDefaultProfile cannot be set when ${base}.localhostProfile is set`,
    ]);
    for (const bad of ['../etc/profile.json', '/abs.json', 'a b.json'])
      expect(msgs({ localhostProfile: bad })[0]).toMatch(
        /localhostProfile: Invalid value: .*seccomp directory/,
      );
    expect(msgs({ localhostProfile: 'kubevirt/kubevirt.json' })).toEqual([]);
  });
});
