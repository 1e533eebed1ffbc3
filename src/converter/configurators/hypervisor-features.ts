/**
 * Panic devices and hypervisor features: ACPI, APIC, SMM, Hyper-V enlightenments (or
 * Hyper-V passthrough), KVM hiding, paravirtual spinlocks, and the dedicated-CPU hint.
 */
import type { FeatureState as VMIFeatureState } from '../../api/generated/types';
import type { Configurator, Conversion } from '../conversion';
import type { FeatureState, Features, HyperV, Panic } from '../domain/types';

const onOff = (f: VMIFeatureState | { enabled?: boolean } | undefined): FeatureState | undefined =>
  f === undefined ? undefined : { state: f.enabled === false ? 'off' : 'on' };

const PANIC_MODELS = ['isa', 'hyperv', 'pvpanic'];

function panics(c: Conversion): void {
  (c.spec.domain.devices.panicDevices ?? []).forEach((p, i) => {
    const model = p.model || 'isa';
    if (!PANIC_MODELS.includes(model)) {
      const path = `spec.domain.devices.panicDevices[${i}].model`;
      c.fail(path, `'${c.line(model, path)}' is not one of ${PANIC_MODELS.join(', ')}`);
    }
    c.domain.devices.panic ??= [];
    c.domain.devices.panic.push({ model: model as Panic['model'] });
  });
}

function hyperv(c: Conversion): HyperV | undefined {
  const f = c.spec.domain.features;
  if (f?.hypervPassthrough?.enabled) return { mode: 'passthrough' };
  const h = f?.hyperv;
  if (!h) return undefined;
  const path = 'spec.domain.features.hyperv';
  const out: HyperV = {
    relaxed: onOff(h.relaxed),
    vapic: onOff(h.vapic),
    vpindex: onOff(h.vpindex),
    runtime: onOff(h.runtime),
    synic: onOff(h.synic),
    reset: onOff(h.reset),
    frequencies: onOff(h.frequencies),
    reenlightenment: onOff(h.reenlightenment),
    tlbflush: onOff(h.tlbflush),
    ipi: onOff(h.ipi),
    evmcs: onOff(h.evmcs),
  };
  if (h.spinlocks) {
    const on = h.spinlocks.enabled !== false;
    const retries = h.spinlocks.spinlocks ?? 4096;
    if (on && (!Number.isInteger(retries) || retries < 4095))
      c.fail(`${path}.spinlocks.spinlocks`, 'must be an integer of at least 4095');
    out.spinlocks = on ? { state: 'on', retries } : { state: 'off' };
  }
  if (h.tlbflush?.direct || h.tlbflush?.extended) {
    // libvirt 9.0's schema has no <direct/>/<extended/> under <tlbflush>: refuse rather than drop them.
    c.fail(
      `${path}.tlbflush`,
      'direct and extended TLB flush are not supported by this converter (libvirt 9.0)',
    );
  }
  if (h.synictimer) {
    out.stimer = { state: h.synictimer.enabled === false ? 'off' : 'on', direct: onOff(h.synictimer.direct) };
  }
  if (h.vendorid) {
    const on = h.vendorid.enabled !== false;
    const id = h.vendorid.vendorid ?? '';
    if (on && !/^[\x21-\x7e]{1,12}$/.test(id))
      c.fail(`${path}.vendorid.vendorid`, 'must be 1 to 12 printable ASCII characters without spaces');
    out.vendor_id = on ? { state: 'on', value: id } : { state: 'off' };
  }
  return out;
}

export const hypervisorFeaturesConfigurator: Configurator = {
  name: 'hypervisorFeatures',
  configure(c: Conversion) {
    panics(c);
    const f = c.spec.domain.features;
    const dedicated = c.spec.domain.cpu?.dedicatedCpuPlacement === true;
    // Like upstream, a VMI without a features block gets no <features> (admission always
    // adds an empty one, which yields ACPI and, on x86, vmport off).
    if (!f && !dedicated) return;
    const features: Features = {};
    if (f?.acpi === undefined || f.acpi.enabled !== false) features.acpi = {};
    if (f?.apic && f.apic.enabled !== false) features.apic = f.apic.endOfInterrupt ? { eoi: 'on' } : {};
    features.hyperv = hyperv(c);
    if (f?.kvm || dedicated) {
      features.kvm = {
        hidden: f?.kvm ? { state: f.kvm.hidden ? 'on' : 'off' } : undefined,
        'hint-dedicated': dedicated ? { state: 'on' } : undefined,
      };
    }
    if (f?.pvspinlock) features.pvspinlock = onOff(f.pvspinlock);
    // `<smm/>` when enabled; nothing when disabled (upstream).
    if (f?.smm && f.smm.enabled !== false) features.smm = {};
    if (c.ctx.arch === 'x86_64') features.vmport = { state: 'off' };
    c.domain.features = features;
  },
};
