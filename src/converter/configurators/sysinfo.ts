/**
 * SMBIOS: the system block (UUID, serial, and the cluster's manufacturer/product/...),
 * the chassis block from `spec.domain.chassis`, and `<smbios mode="sysinfo"/>` in `<os>`.
 */
import type { Configurator, Conversion } from '../conversion';
import type { SysInfoEntry } from '../domain/types';

function entries(c: Conversion, values: Record<string, string | undefined>, path: string): SysInfoEntry[] {
  const out: SysInfoEntry[] = [];
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined || value === '') continue;
    out.push({ name, value: c.line(value, `${path}.${name}`) });
  }
  return out;
}

export const sysinfoConfigurator: Configurator = {
  name: 'sysinfo',
  configure(c: Conversion) {
    const fw = c.spec.domain.firmware;
    const s = c.ctx.smbios;
    const system = [
      ...entries(c, { uuid: c.domain.uuid, serial: fw?.serial }, 'spec.domain.firmware'),
      ...entries(
        c,
        {
          manufacturer: s.manufacturer,
          family: s.family,
          product: s.product,
          sku: s.sku,
          version: s.version,
        },
        'smbios',
      ),
    ];
    const ch = c.spec.domain.chassis;
    const chassis = ch
      ? entries(
          c,
          {
            manufacturer: ch.manufacturer,
            version: ch.version,
            serial: ch.serial,
            asset: ch.asset,
            sku: ch.sku,
          },
          'spec.domain.chassis',
        )
      : [];
    c.domain.sysinfo = {
      type: 'smbios',
      system: system.length ? { entry: system } : undefined,
      chassis: chassis.length ? { entry: chassis } : undefined,
    };
  },
};
