/** Test support: runs configurators on a small VMI, without the rest of the pipeline. */
import type { VirtualMachineInstance, VirtualMachineInstanceSpec } from '../../../src/api/generated/types';
import { type Configurator, type ConverterContext, convertVMI, type Domain } from '../../../src/converter';
import { testContext } from './contexts';

/** A VMI named `default/t` with 1Gi of memory and the given spec parts. */
export function vmi(
  spec: Partial<Omit<VirtualMachineInstanceSpec, 'domain'>> & {
    domain?: Partial<VirtualMachineInstanceSpec['domain']>;
  } = {},
  meta: Partial<NonNullable<VirtualMachineInstance['metadata']>> = {},
): VirtualMachineInstance {
  const { domain, ...rest } = spec;
  return {
    metadata: { name: 't', namespace: 'default', ...meta },
    spec: {
      ...rest,
      domain: { memory: { guest: '1Gi' }, ...domain, devices: { ...(domain?.devices ?? {}) } },
    },
  };
}

/** Runs only `configurators` (in order) and returns the domain they built. */
export function run(
  configurators: Configurator[],
  v: VirtualMachineInstance,
  ctx: ConverterContext = testContext(),
): Domain {
  return convertVMI(v, ctx, configurators);
}
