/**
 * The conversion pipeline: a (defaulted, validated) VMI plus a host context in, a libvirt
 * domain out. Pure and deterministic: no clock, no randomness, no IO.
 */
import type { VirtualMachineInstance } from '../api/generated/types';
import { configurators } from './configurators';
import type { ConverterContext } from './context';
import { type Configurator, Conversion } from './conversion';
import type { Domain } from './domain/types';
import { encodeDomain } from './domain/xml';

/** Converts a VMI to a domain. Throws `ConversionError` with the offending field path. */
export function convertVMI(
  vmi: VirtualMachineInstance,
  ctx: ConverterContext,
  pipeline: readonly Configurator[] = configurators,
): Domain {
  const domain: Domain = {
    type: 'kvm',
    name: '',
    memory: { unit: 'KiB', value: 0 },
    os: { type: { value: 'hvm' } },
    devices: {},
  };
  const c = new Conversion(vmi, ctx, domain);
  for (const configurator of pipeline) configurator.configure(c);
  return domain;
}

/** Converts a VMI straight to libvirt domain XML. */
export function convertVMIToXML(vmi: VirtualMachineInstance, ctx: ConverterContext): string {
  return encodeDomain(convertVMI(vmi, ctx));
}
