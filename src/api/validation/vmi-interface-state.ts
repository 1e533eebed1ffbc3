/**
 * An interface's `state` (upstream's validateInterfaceStateValue): `up`, `down` or
 * `absent` (hot-unplug); SR-IOV NICs take no link state, `absent` is for the bridge
 * binding and never the default network (the pod network or multus's default).
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec } from '../generated/types';

const STATES = new Set(['', 'absent', 'down', 'up']);

export function validateInterfaceStates(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const errs: FieldError[] = [];
  const networks = spec.networks ?? [];
  const defaultNetwork = networks.find((n) => n.pod) ?? networks.find((n) => n.multus?.default);
  (spec.domain?.devices?.interfaces ?? []).forEach((iface, idx) => {
    const state = iface.state ?? '';
    const path = field.child('domain', 'devices', 'interfaces').index(idx).child('state');
    if (!STATES.has(state)) {
      errs.push(fieldError(path, `logical ${iface.name} interface state value is unsupported: ${state}`));
    }
    if (iface.sriov && (state === 'down' || state === 'up')) {
      errs.push(
        fieldError(
          path,
          `${JSON.stringify(iface.name)} interface's state "${state}" is not supported for SR-IOV NICs`,
        ),
      );
    }
    if (state === 'absent' && !iface.bridge) {
      errs.push(
        fieldError(
          path,
          `${JSON.stringify(iface.name)} interface's state "absent" is supported only for bridge binding`,
        ),
      );
    }
    if (state === 'absent' && defaultNetwork?.name === iface.name) {
      errs.push(
        fieldError(
          path,
          `${JSON.stringify(iface.name)} interface's state "absent" is not supported on default networks`,
        ),
      );
    }
  });
  return errs;
}
