/**
 * `kubevirt-ts convert [--emulation] [--arch x86_64] [--feature-gates A,B] [--host-device
 * name=addr] [--cpu-set 2,3] [--sev cbitpos=51,reduced-phys-bits=1,es,snp] FILE`: prints
 * the libvirt domain XML of each VirtualMachineInstance (or VirtualMachine template) in
 * FILE after admission (defaulting and validation). Instance types and preferences in the
 * same file are applied to VMs that reference them. Invalid input prints every field-path
 * error and exits non-zero.
 */
import { accessSync, constants } from 'node:fs';
import type { Command } from 'commander';
import { createClusterConfig } from '../../api/config/cluster-config';
import { defaultVirtualMachine } from '../../api/defaults/vm-defaults';
import { type FieldError, formatFieldError } from '../../api/errors';
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { createInstancetypeCatalog } from '../../api/instancetype/catalog';
import { expandVirtualMachine } from '../../api/instancetype/expand';
import { loadManifestFile } from '../../api/manifest/load';
import { admit } from '../../api/validation/admission';
import {
  ConversionError,
  convertVMIToXML,
  defaultConverterContext,
  type ResolvedHostDevice,
  type SEVHost,
} from '../../converter';

/** Kubernetes architecture names and the libvirt names the converter uses. */
const ARCHES: Record<string, { kube: string; libvirt: string }> = {
  x86_64: { kube: 'amd64', libvirt: 'x86_64' },
  amd64: { kube: 'amd64', libvirt: 'x86_64' },
  aarch64: { kube: 'arm64', libvirt: 'aarch64' },
  arm64: { kube: 'arm64', libvirt: 'aarch64' },
  s390x: { kube: 's390x', libvirt: 's390x' },
};

/** Options of the convert command. */
export interface ConvertOptions {
  emulation?: boolean;
  arch?: string;
  featureGates?: string;
  /** `name=0000:81:00.0`, `name=mdev:<uuid>` or `name=usb:<vendor>:<product>`. */
  hostDevice?: string[];
  /** Host CPUs for dedicated placement, e.g. `2,3,4`. */
  cpuSet?: string;
  /** Extra manifests holding instance types and preferences. */
  instancetypes?: string[];
  /** The host's SEV facts, `cbitpos=<n>,reduced-phys-bits=<n>[,es][,snp]` (virsh domcapabilities). */
  sev?: string;
}

/** Parses `--sev` into the converter context's SEV host facts. */
export function parseSEVHost(value: string): { sev?: SEVHost; error?: string } {
  const usage = `--sev: '${JSON.stringify(value).slice(1, -1)}' is not cbitpos=<n>,reduced-phys-bits=<n>[,es][,snp]`;
  const sev: Partial<SEVHost> = { es: false, snp: false };
  for (const part of value.split(',')) {
    const m = /^(cbitpos|reduced-phys-bits)=([0-9]{1,2})$/.exec(part);
    if (m) {
      if (m[1] === 'cbitpos') sev.cbitpos = Number(m[2]);
      else sev.reducedPhysBits = Number(m[2]);
    } else if (part === 'es') sev.es = true;
    else if (part === 'snp') sev.snp = true;
    else return { error: usage };
  }
  if (sev.cbitpos === undefined || sev.reducedPhysBits === undefined) return { error: usage };
  return { sev: sev as SEVHost };
}

/** Parses `--host-device` values into the converter context's map. */
function parseHostDevices(values: string[]): {
  devices: Record<string, ResolvedHostDevice>;
  errors: string[];
} {
  const devices: Record<string, ResolvedHostDevice> = {};
  const errors: string[] = [];
  for (const v of values) {
    const m =
      /^([^=]+)=(?:(mdev):([0-9a-fA-F-]{36})|(usb):([0-9a-fA-F]{4}):([0-9a-fA-F]{4})|(?:pci:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]))$/.exec(
        v,
      );
    if (!m) {
      errors.push(
        `--host-device: '${JSON.stringify(v).slice(1, -1)}' is not name=<pci address>, name=mdev:<uuid> or name=usb:<vendor>:<product>`,
      );
      continue;
    }
    if (m[2]) devices[m[1]] = { type: 'mdev', uuid: m[3] };
    else if (m[4]) devices[m[1]] = { type: 'usb', vendor: m[5], product: m[6] };
    else devices[m[1]] = { type: 'pci', address: m[7] };
  }
  return { devices, errors };
}

/** Whether /dev/kvm can be opened read-write by this process. */
function kvmUsable(): boolean {
  try {
    accessSync('/dev/kvm', constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** A VM's template as the VMI the VM controller would create from it. */
function vmiFromVM(vm: VirtualMachine): VirtualMachineInstance {
  const t = vm.spec.template;
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { ...(t.metadata ?? {}), name: vm.metadata?.name, namespace: vm.metadata?.namespace },
    spec: structuredClone(t.spec ?? ({} as VirtualMachineInstance['spec'])),
  };
}

/** Result of converting one file: XML documents and error lines. */
export interface ConvertResult {
  xml: string[];
  errors: string[];
}

/** Converts every VM and VMI in `file`; never throws for bad input. */
export async function convertFile(file: string, opts: ConvertOptions = {}): Promise<ConvertResult> {
  const arch = ARCHES[opts.arch ?? 'x86_64'];
  if (!arch)
    return { xml: [], errors: [`--arch: '${opts.arch}' is not one of ${Object.keys(ARCHES).join(', ')}`] };
  const gates = (opts.featureGates ?? '')
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
  const config = createClusterConfig(
    { developerConfiguration: { useEmulation: opts.emulation === true } },
    { hostArchitecture: arch.kube, featureGates: gates },
  );
  const hostDevices = parseHostDevices(opts.hostDevice ?? []);
  if (hostDevices.errors.length) return { xml: [], errors: hostDevices.errors };
  let cpuSet: number[] | undefined;
  if (opts.cpuSet !== undefined) {
    cpuSet = opts.cpuSet.split(',').map(Number);
    if (cpuSet.some((n) => !Number.isInteger(n) || n < 0))
      return { xml: [], errors: ['--cpu-set: expected a comma-separated list of CPU numbers'] };
  }
  let sev: SEVHost | undefined;
  if (opts.sev !== undefined) {
    const parsed = parseSEVHost(opts.sev);
    if (parsed.error) return { xml: [], errors: [parsed.error] };
    sev = parsed.sev;
  }
  const loaded = await loadManifestFile(file);
  const extra = await Promise.all((opts.instancetypes ?? []).map((f) => loadManifestFile(f)));
  const loadErrors = [loaded, ...extra].flatMap((r) => r.errors.map((e) => e.message));
  if (loadErrors.length) return { xml: [], errors: loadErrors };
  const catalog = createInstancetypeCatalog(
    [loaded, ...extra].flatMap((r) => r.objects.map((o) => o.object)),
  );
  const ctx = defaultConverterContext({
    arch: arch.libvirt,
    kvmAvailable: kvmUsable(),
    allowEmulation: config.useEmulation,
    hostDevices: hostDevices.devices,
    cpuSet,
    sev,
  });
  const out: ConvertResult = { xml: [], errors: [] };
  const fail = (kind: string, name: string, errs: FieldError[]) =>
    out.errors.push(...errs.map((e) => formatFieldError(kind, name, e)));

  for (const o of loaded.objects) {
    let vmi: VirtualMachineInstance;
    const name = String((o.object as { metadata?: { name?: string } }).metadata?.name ?? '');
    if (o.kind === 'VirtualMachine') {
      const vm = defaultVirtualMachine(o.object as VirtualMachine, config, { instancetypes: catalog });
      const vmAdmission = admit(vm as never, config, { instancetypes: catalog });
      if (vmAdmission.errors.length) {
        fail('VirtualMachine', name, vmAdmission.errors);
        continue;
      }
      const expanded = expandVirtualMachine(vm, catalog);
      if (expanded.errors.length) {
        fail('VirtualMachine', name, expanded.errors);
        continue;
      }
      vmi = vmiFromVM(expanded.vm);
    } else if (o.kind === 'VirtualMachineInstance') {
      vmi = o.object as VirtualMachineInstance;
    } else {
      continue;
    }
    const admission = admit({ ...vmi, kind: 'VirtualMachineInstance' } as never, config);
    if (admission.errors.length) {
      fail('VirtualMachineInstance', name, admission.errors);
      continue;
    }
    try {
      out.xml.push(convertVMIToXML(admission.object as unknown as VirtualMachineInstance, ctx));
    } catch (e) {
      if (!(e instanceof ConversionError)) throw e;
      out.errors.push(e.message);
    }
  }
  if (out.xml.length === 0 && out.errors.length === 0) {
    out.errors.push(`${file}: no VirtualMachine or VirtualMachineInstance in the file`);
  }
  return out;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Registers `convert` on the kubevirt-ts program. */
export function registerConvertCommand(program: Command): void {
  program
    .command('convert')
    .description('print the libvirt domain XML of a VirtualMachineInstance (or a VirtualMachine template)')
    .argument('<file>', 'YAML or JSON manifest')
    .option('--emulation', 'allow software emulation (domain type qemu) when KVM is not usable')
    .option('--arch <arch>', 'guest architecture (x86_64, aarch64, s390x)', 'x86_64')
    .option('--feature-gates <gates>', 'comma-separated feature gates to enable')
    .option(
      '--host-device <name=address...>',
      'host device for a GPU, host device or SR-IOV interface name (repeatable)',
      collect,
      [],
    )
    .option('--cpu-set <cpus>', 'host CPUs pinned for dedicated CPU placement, e.g. 2,3,4')
    .option(
      '--sev <facts>',
      "the host's AMD SEV facts for SEV/SNP VMIs: cbitpos=<n>,reduced-phys-bits=<n>[,es][,snp] (virsh domcapabilities)",
    )
    .option('--instancetypes <file...>', 'manifests with instance types and preferences for VMs', collect, [])
    .action(async (file: string, opts: ConvertOptions) => {
      const result = await convertFile(file, opts);
      for (const xml of result.xml) process.stdout.write(xml);
      for (const line of result.errors) process.stderr.write(`${line}\n`);
      if (result.errors.length) process.exitCode = 1;
    });
}
