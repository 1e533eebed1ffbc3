/**
 * AMD SEV, SEV-ES and SEV-SNP host support, decided from two sources: libvirt's domain
 * capabilities (`<features><sev supported='yes'>` with cbitpos, reducedPhysBits,
 * maxGuests, maxESGuests; and, from libvirt 10.5, `<launchSecurity>` listing
 * `sev-snp`) and the kvm_amd module parameters `sev`, `sev_es`, `sev_snp` under
 * `/sys/module/kvm_amd/parameters` (read from a configurable root so tests use fixtures).
 * A feature counts only when both libvirt and the kernel agree it is on.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import type { SevCapabilities } from '../driver';

/** What libvirt's domain capabilities say about SEV. */
export interface DomcapsSev {
  supported: boolean;
  cbitpos?: number;
  reducedPhysBits?: number;
  maxGuests: number;
  maxEsGuests: number;
  /** Launch security types libvirt lists (`sev`, `sev-snp`, ...); empty on libvirt < 10.5. */
  launchSecurityTypes: string[];
}

/** kvm_amd module parameters; a parameter the kernel lacks reads as false. */
export interface KvmAmdParams {
  sev: boolean;
  sevEs: boolean;
  sevSnp: boolean;
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  isArray: (name) => name === 'value' || name === 'enum',
});

function num(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : undefined;
}

/** Parses the SEV part of `virsh domcapabilities` output. */
export function parseDomcapsSev(xml: string): DomcapsSev {
  const doc = parser.parse(xml);
  const root = doc?.domainCapabilities;
  if (!root) throw new Error('domain capabilities: no <domainCapabilities> root element');
  const features = root.features ?? {};
  const sev = features.sev;
  const supported = sev?.['@_supported'] === 'yes';
  const ls = features.launchSecurity;
  const types: string[] = [];
  if (ls?.['@_supported'] === 'yes') {
    for (const e of ls.enum ?? []) {
      if (e['@_name'] === 'sectype') for (const v of e.value ?? []) types.push(String(v));
    }
  }
  return {
    supported,
    cbitpos: supported ? num(sev.cbitpos) : undefined,
    reducedPhysBits: supported ? num(sev.reducedPhysBits) : undefined,
    maxGuests: (supported && num(sev.maxGuests)) || 0,
    maxEsGuests: (supported && num(sev.maxESGuests)) || 0,
    launchSecurityTypes: types,
  };
}

/** Where kvm_amd's parameters live below `sysfsRoot` (default `/sys`). */
export function kvmAmdParamsDir(sysfsRoot = '/sys'): string {
  return join(sysfsRoot, 'module', 'kvm_amd', 'parameters');
}

async function readFlag(dir: string, name: string): Promise<boolean> {
  try {
    const v = (await readFile(join(dir, name), 'utf8')).trim();
    // The kernel prints bool parameters as Y/N and older int ones as 1/0.
    return v === 'Y' || v === 'y' || v === '1';
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

/** Reads kvm_amd's `sev`, `sev_es` and `sev_snp` parameters; an absent module means all false. */
export async function readKvmAmdParams(sysfsRoot = '/sys'): Promise<KvmAmdParams> {
  const dir = kvmAmdParamsDir(sysfsRoot);
  const [sev, sevEs, sevSnp] = await Promise.all([
    readFlag(dir, 'sev'),
    readFlag(dir, 'sev_es'),
    readFlag(dir, 'sev_snp'),
  ]);
  return { sev, sevEs, sevSnp };
}

/**
 * Combines libvirt's view and the kernel's: SEV needs both; SEV-ES also needs ES
 * guest slots (maxESGuests > 0); SEV-SNP needs libvirt to list `sev-snp` and the
 * kernel's `sev_snp`.
 */
export function combineSevCapabilities(domcaps: DomcapsSev, params: KvmAmdParams): SevCapabilities {
  const sev = domcaps.supported && params.sev;
  const sevEs = sev && params.sevEs && domcaps.maxEsGuests > 0;
  const sevSnp = sev && params.sevSnp && domcaps.launchSecurityTypes.includes('sev-snp');
  return {
    sev,
    sevEs,
    sevSnp,
    cbitpos: domcaps.cbitpos,
    reducedPhysBits: domcaps.reducedPhysBits,
    maxGuests: sev ? domcaps.maxGuests : 0,
    maxEsGuests: sevEs || sevSnp ? domcaps.maxEsGuests : 0,
  };
}

/** SEV support of a host from its domain capabilities XML and sysfs. */
export async function probeSevCapabilities(domcapsXml: string, sysfsRoot = '/sys'): Promise<SevCapabilities> {
  return combineSevCapabilities(parseDomcapsSev(domcapsXml), await readKvmAmdParams(sysfsRoot));
}
