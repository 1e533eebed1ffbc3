/**
 * The order in which a pool picks VMs to scale in or to update (upstream
 * sortVMsBasedOnSortPolicy and filterVMsBasedOnSelectors): a sort policy
 * (AscendingOrder/DescendingOrder by index, Newest/Oldest by creation, Random, the
 * default) and optional selectors narrowing the candidates by the VM template's labels and
 * node selector.
 */
import type {
  NodeSelectorRequirement,
  VirtualMachine,
  VirtualMachinePoolSelectionPolicy,
} from '../../../api/generated/types';
import { labelSelectorMatches } from '../../../api/validation/label-selector';

/** The trailing `-<n>` of a VM name (0 when there is none, as upstream's indexFromName errors). */
function ordinal(vm: VirtualMachine): number {
  const m = /-(\d+)$/.exec(vm.metadata?.name ?? '');
  return m ? Number(m[1]) : 0;
}

function created(vm: VirtualMachine): number {
  const t = vm.metadata?.creationTimestamp;
  return t === undefined ? 0 : Date.parse(String(t));
}

/** `vms` ordered by `policy` (a copy); unknown policies sort at random, as upstream. */
export function sortBySelectionPolicy(
  vms: readonly VirtualMachine[],
  policy: VirtualMachinePoolSelectionPolicy | undefined,
  random: () => number = Math.random,
): VirtualMachine[] {
  const out = [...vms];
  switch (policy?.sortPolicy ?? 'Random') {
    case 'AscendingOrder':
      return out.sort((a, b) => ordinal(a) - ordinal(b));
    case 'DescendingOrder':
      return out.sort((a, b) => ordinal(b) - ordinal(a));
    case 'Newest':
      return out.sort((a, b) => created(b) - created(a));
    case 'Oldest':
      return out.sort((a, b) => created(a) - created(b));
    default:
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
      return out;
  }
}

function requirementMatches(r: NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, r.key);
  const v = labels[r.key];
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return has && values.includes(v!);
    case 'NotIn':
      return !has || !values.includes(v!);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
    case 'Gt':
    case 'Lt': {
      const [n, bound] = [Number(v), Number(values[0])];
      if (!has || !Number.isInteger(n) || !Number.isInteger(bound)) return false;
      return r.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return false;
  }
}

/**
 * The VMs the policy's selectors select: the VM template's labels must match
 * `labelSelector` and its `nodeSelector` every `nodeSelectorRequirementMatcher` entry;
 * all VMs when there are no selectors.
 */
export function filterBySelectors(
  vms: readonly VirtualMachine[],
  policy: VirtualMachinePoolSelectionPolicy | undefined,
): VirtualMachine[] {
  const s = policy?.selectors;
  if (!s?.labelSelector && !s?.nodeSelectorRequirementMatcher) return [...vms];
  return vms.filter((vm) => {
    const tpl = vm.spec.template;
    if (s.labelSelector && !labelSelectorMatches(s.labelSelector, tpl?.metadata?.labels)) return false;
    const nodeSel = tpl?.spec?.nodeSelector ?? {};
    return (s.nodeSelectorRequirementMatcher ?? []).every((r) => requirementMatches(r, nodeSel));
  });
}
