/**
 * The launcher pod's probes from the VMI's, as upstream's rendercontainer.go
 * (WithReadinessProbe, WithLivelinessProbe, copyProbe, wrapExecProbeWithVirtProbe,
 * wrapGuestAgentPingWithVirtProbe): `httpGet` and `tcpSocket` are copied onto the compute
 * container, so the kubelet probes the pod's IP, where the guest's ports are reached
 * (masquerade forwards them; bridge gives the guest that address); `exec` and
 * `guestAgentPing` become an exec probe running `virt-probe` in the compute container,
 * which asks the launcher to run the command through the guest agent. Every probe starts
 * {@link LIBVIRT_STARTUP_DELAY_SECONDS} later than the VMI says (the launcher has to
 * start the domain first), and the exec ones get one second more for virt-probe's own
 * round trip, as upstream.
 */
import { setProbeDefaults } from '../../../api/defaults/object-defaults';
import type { Probe, VirtualMachineInstance } from '../../../api/generated/types';
import { LAUNCHER_COMMAND } from '../../common/launcher-args';
import type { PodProbe } from '../../common/pod';

/** Upstream's LibvirtStartupDelay, seconds. */
export const LIBVIRT_STARTUP_DELAY_SECONDS = 10;
/** The subcommand of {@link LAUNCHER_COMMAND} that is upstream's virt-probe binary. */
export const VIRT_PROBE_SUBCOMMAND = 'virt-probe';

/** The compute container's probe for one of the VMI's probes (undefined when it has none). */
export function computeProbe(vmi: VirtualMachineInstance, probe: Probe | undefined): PodProbe | undefined {
  if (!probe) return undefined;
  const p = structuredClone(probe);
  setProbeDefaults(p);
  const out: PodProbe = {
    initialDelaySeconds: (p.initialDelaySeconds ?? 0) + LIBVIRT_STARTUP_DELAY_SECONDS,
    timeoutSeconds: p.timeoutSeconds,
    periodSeconds: p.periodSeconds,
    successThreshold: p.successThreshold,
    failureThreshold: p.failureThreshold,
  };
  const domain = `${vmi.metadata?.namespace ?? 'default'}_${vmi.metadata?.name ?? ''}`;
  const virtProbe = [
    LAUNCHER_COMMAND,
    VIRT_PROBE_SUBCOMMAND,
    '--domainName',
    domain,
    '--timeoutSeconds',
    String(p.timeoutSeconds),
  ];
  if (p.guestAgentPing) {
    out.exec = { command: [...virtProbe, '--guestAgentPing'] };
    out.timeoutSeconds = (p.timeoutSeconds ?? 1) + 1;
  } else if (p.exec?.command?.length) {
    const [cmd, ...args] = p.exec.command;
    out.exec = { command: [...virtProbe, '--command', cmd, '--', ...args] };
    out.timeoutSeconds = (p.timeoutSeconds ?? 1) + 1;
  } else if (p.httpGet) {
    out.httpGet = structuredClone(p.httpGet);
  } else if (p.tcpSocket) {
    out.tcpSocket = structuredClone(p.tcpSocket);
  }
  return out;
}

/**
 * The compute container's ports: the VMI's interfaces' `ports` (upstream
 * containerPortsFromVMI), which named probe ports resolve against; undefined when none.
 */
export function computeContainerPorts(
  vmi: VirtualMachineInstance,
): Array<{ name?: string; containerPort: number; protocol: string }> | undefined {
  const out: Array<{ name?: string; containerPort: number; protocol: string }> = [];
  for (const iface of vmi.spec.domain.devices.interfaces ?? []) {
    for (const port of iface.ports ?? []) {
      out.push({
        ...(port.name ? { name: port.name } : {}),
        containerPort: port.port,
        protocol: port.protocol ?? 'TCP',
      });
    }
  }
  return out.length ? out : undefined;
}
