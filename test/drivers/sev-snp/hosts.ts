/** The four fixture hosts: libvirt domain capabilities plus a sysfs tree with kvm_amd's parameters. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostCapabilities } from '../../../src/drivers/driver';
import { probeSevCapabilities } from '../../../src/drivers/sev-snp';

export const fixtures = join(import.meta.dirname, 'fixtures');
export const HOSTS = ['none', 'sev', 'sev-es', 'snp'] as const;
export type Host = (typeof HOSTS)[number];

export const domcapsOf = (host: Host) => readFileSync(join(fixtures, `domcaps-${host}.xml`), 'utf8');
export const sysfsOf = (host: Host) => join(fixtures, `sysfs-${host}`);

/** Host capabilities of a fixture host as the libvirt driver would probe them. */
export async function capsOf(host: Host): Promise<HostCapabilities> {
  return {
    driver: 'libvirt',
    arch: 'x86_64',
    kvmUsable: true,
    emulationAvailable: true,
    cpuModels: ['EPYC'],
    cpuFeatures: [],
    maxVcpus: 255,
    memoryBytes: 64 * 1024 ** 3,
    hugepageSizesKiB: [2048],
    machineTypes: ['q35'],
    sev: await probeSevCapabilities(domcapsOf(host), sysfsOf(host)),
  };
}
