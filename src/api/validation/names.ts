/**
 * Object name, namespace and label rules as the Kubernetes API server applies them to
 * custom resources (k8s.io/apimachinery/pkg/util/validation), with its messages.
 */
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { ObjectMeta } from '../generated/types';

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123LabelRe = new RegExp(`^${dns1123LabelFmt}$`);
const dns1123SubdomainRe = new RegExp(`^${dns1123SubdomainFmt}$`);
const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const qualifiedNameRe = new RegExp(`^${qualifiedNameFmt}$`);
const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValueRe = new RegExp(`^${labelValueFmt}$`);

/** Kubernetes' `IsDNS1123Label`: the messages for every rule `value` breaks (empty when valid). */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!dns1123LabelRe.test(value)) {
    errs.push(
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '" +
        `${dns1123LabelFmt}')`,
    );
  }
  return errs;
}

/** Kubernetes' `IsDNS1123Subdomain`. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push('must be no more than 253 characters');
  if (!dns1123SubdomainRe.test(value)) {
    errs.push(
      "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '" +
        `${dns1123SubdomainFmt}')`,
    );
  }
  return errs;
}

/** Kubernetes' `IsQualifiedName` (label and annotation keys: optional DNS prefix, then a name). */
export function isQualifiedName(value: string): string[] {
  const parts = value.split('/');
  let name = value;
  const errs: string[] = [];
  if (parts.length === 2) {
    const [prefix] = parts;
    name = parts[1];
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDNS1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else if (parts.length > 2) {
    return [
      "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '" +
        `${qualifiedNameFmt}') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  if (name.length > 0 && !qualifiedNameRe.test(name)) {
    errs.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '" +
        `${qualifiedNameFmt}')`,
    );
  }
  return errs;
}

/** Kubernetes' `IsValidLabelValue`. */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push('must be no more than 63 characters');
  if (!labelValueRe.test(value)) {
    errs.push(
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '" +
        `${labelValueFmt}')`,
    );
  }
  return errs;
}

/** A value quoted as the API server prints it in `Invalid value: "..."`. */
function shown(v: string): string {
  return JSON.stringify(v.length > 256 ? `${v.slice(0, 256)}...` : v);
}

const maxAnnotationsBytes = 256 * 1024;

/**
 * The API server's object metadata rules for a custom resource: name (or generateName)
 * required and a DNS-1123 subdomain, namespace a DNS-1123 label, label keys and values,
 * annotation keys and total size.
 */
export function validateObjectMeta(
  meta: ObjectMeta | undefined,
  options: { namespaced?: boolean } = {},
): FieldError[] {
  const field = FieldPath.of('metadata');
  const errs: FieldError[] = [];
  const name = meta?.name;
  if (name === undefined || name === '') {
    if (!meta?.generateName) {
      errs.push(
        fieldError(
          field.child('name'),
          'Required value: name or generateName is required',
          'FieldValueRequired',
        ),
      );
    }
  } else if (typeof name !== 'string') {
    errs.push(fieldError(field.child('name'), 'Invalid value: name must be a string'));
  } else {
    for (const m of isDNS1123Subdomain(name)) {
      errs.push(fieldError(field.child('name'), `Invalid value: ${shown(name)}: ${m}`));
    }
  }
  if (meta?.generateName) {
    const prefix = meta.generateName.endsWith('-') ? `${meta.generateName}a` : meta.generateName;
    for (const m of isDNS1123Subdomain(prefix)) {
      errs.push(fieldError(field.child('generateName'), `Invalid value: ${shown(meta.generateName)}: ${m}`));
    }
  }
  if (meta?.namespace !== undefined && meta.namespace !== '') {
    if (options.namespaced === false) {
      errs.push(
        fieldError(field.child('namespace'), 'Forbidden: not allowed on this type', 'FieldValueForbidden'),
      );
    } else {
      for (const m of isDNS1123Label(meta.namespace)) {
        errs.push(fieldError(field.child('namespace'), `Invalid value: ${shown(meta.namespace)}: ${m}`));
      }
    }
  }
  errs.push(...validateLabels(field.child('labels'), meta?.labels));
  let annotationBytes = 0;
  for (const [k, v] of Object.entries(meta?.annotations ?? {})) {
    for (const m of isQualifiedName(k.toLowerCase())) {
      errs.push(fieldError(field.child('annotations'), `Invalid value: ${shown(k)}: ${m}`));
    }
    annotationBytes += k.length + String(v).length;
  }
  if (annotationBytes > maxAnnotationsBytes) {
    errs.push(
      fieldError(
        field.child('annotations'),
        `Too long: may not be more than ${maxAnnotationsBytes} bytes`,
        'FieldValueInvalid',
      ),
    );
  }
  return errs;
}

/** Label key and value rules for a label map at `field`. */
export function validateLabels(field: FieldPath, labels: Record<string, string> | undefined): FieldError[] {
  const errs: FieldError[] = [];
  for (const [k, v] of Object.entries(labels ?? {})) {
    for (const m of isQualifiedName(k)) errs.push(fieldError(field, `Invalid value: ${shown(k)}: ${m}`));
    if (typeof v !== 'string') {
      errs.push(fieldError(field.key(k), `Invalid value: label values must be strings`));
      continue;
    }
    for (const m of isValidLabelValue(v))
      errs.push(fieldError(field.key(k), `Invalid value: ${shown(v)}: ${m}`));
  }
  return errs;
}
