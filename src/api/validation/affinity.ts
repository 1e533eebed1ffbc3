/**
 * Scheduling affinity rules (Kubernetes' pod validation, which upstream KubeVirt copies
 * for `spec.affinity`): node selector terms and requirements, pod (anti-)affinity terms
 * and weights. Messages keep Kubernetes' `<field>: <kind>: <detail>` form, as upstream
 * forwards them.
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { Affinity, NodeSelectorTerm, PodAffinityTerm } from '../generated/types';
import { validateLabelSelector } from './label-selector';
import { isQualifiedName } from './names';

function err(
  path: FieldPath,
  kind: string,
  detail: string,
  type: FieldError['type'] = 'FieldValueInvalid',
): FieldError {
  return fieldError(path, `${path}: ${kind}: ${detail}`, type);
}

function validateTerm(path: FieldPath, term: NodeSelectorTerm): FieldError[] {
  const errs: FieldError[] = [];
  for (const [list, name] of [
    [term.matchExpressions ?? [], 'matchExpressions'],
    [term.matchFields ?? [], 'matchFields'],
  ] as const) {
    list.forEach((req, i) => {
      const p = path.child(name).index(i);
      const values = req.values ?? [];
      if ((req.operator === 'In' || req.operator === 'NotIn') && values.length === 0) {
        errs.push(
          err(
            p.child('values'),
            'Required value',
            "must be specified when `operator` is 'In' or 'NotIn'",
            'FieldValueRequired',
          ),
        );
      } else if ((req.operator === 'Exists' || req.operator === 'DoesNotExist') && values.length > 0) {
        errs.push(
          err(
            p.child('values'),
            'Forbidden',
            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            'FieldValueForbidden',
          ),
        );
      } else if (req.operator === 'Gt' || req.operator === 'Lt') {
        if (values.length !== 1) {
          errs.push(
            err(
              p.child('values'),
              'Required value',
              "must be specified single value when `operator` is 'Lt' or 'Gt'",
              'FieldValueRequired',
            ),
          );
        } else if (!/^-?\d+$/.test(values[0])) {
          errs.push(err(p.child('values').index(0), 'Invalid value', `"${values[0]}": must be an integer`));
        }
      }
      if (name === 'matchExpressions') {
        for (const m of isQualifiedName(req.key ?? ''))
          errs.push(err(p.child('key'), 'Invalid value', `"${req.key}": ${m}`));
      }
    });
  }
  return errs;
}

function validatePodTerm(path: FieldPath, term: PodAffinityTerm): FieldError[] {
  const errs = validateLabelSelector(path.child('labelSelector'), term.labelSelector);
  errs.push(...validateLabelSelector(path.child('namespaceSelector'), term.namespaceSelector));
  if (!term.topologyKey) {
    errs.push(err(path.child('topologyKey'), 'Required value', 'can not be empty', 'FieldValueRequired'));
  } else {
    for (const m of isQualifiedName(term.topologyKey)) {
      errs.push(err(path.child('topologyKey'), 'Invalid value', `"${term.topologyKey}": ${m}`));
    }
  }
  return errs;
}

function validateWeight(path: FieldPath, weight: number): FieldError[] {
  return weight >= 1 && weight <= 100
    ? []
    : [err(path, 'Invalid value', `${weight}: must be in the range 1-100`)];
}

/** Rules for `spec.affinity`; `field` is the spec's path. */
export function validateAffinity(field: FieldPath, affinity: Affinity | undefined): FieldError[] {
  if (!affinity) return [];
  const errs: FieldError[] = [];
  const ap = field.child('affinity');
  const na = affinity.nodeAffinity;
  if (na) {
    const np = ap.child('nodeAffinity');
    const required = na.requiredDuringSchedulingIgnoredDuringExecution;
    if (required) {
      const rp = np.child('requiredDuringSchedulingIgnoredDuringExecution', 'nodeSelectorTerms');
      if (!required.nodeSelectorTerms?.length) {
        errs.push(
          err(rp, 'Required value', 'must have at least one node selector term', 'FieldValueRequired'),
        );
      }
      (required.nodeSelectorTerms ?? []).forEach((t, i) => {
        errs.push(...validateTerm(rp.index(i), t));
      });
    }
    (na.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((pref, i) => {
      const pp = np.child('preferredDuringSchedulingIgnoredDuringExecution').index(i);
      errs.push(...validateWeight(pp.child('weight'), pref.weight));
      errs.push(...validateTerm(pp.child('preference'), pref.preference ?? {}));
    });
  }
  for (const [name, pa] of [
    ['podAffinity', affinity.podAffinity],
    ['podAntiAffinity', affinity.podAntiAffinity],
  ] as const) {
    if (!pa) continue;
    const pp = ap.child(name);
    (pa.requiredDuringSchedulingIgnoredDuringExecution ?? []).forEach((t, i) => {
      errs.push(...validatePodTerm(pp.child('requiredDuringSchedulingIgnoredDuringExecution').index(i), t));
    });
    (pa.preferredDuringSchedulingIgnoredDuringExecution ?? []).forEach((w, i) => {
      const wp = pp.child('preferredDuringSchedulingIgnoredDuringExecution').index(i);
      errs.push(...validateWeight(wp.child('weight'), w.weight));
      errs.push(...validatePodTerm(wp.child('podAffinityTerm'), w.podAffinityTerm ?? { topologyKey: '' }));
    });
  }
  return errs;
}
