/**
 * Field-path errors, the one error shape of validation and admission: every rule reports
 * the path of the offending field (`spec.domain.devices.disks[1].name`) and a message,
 * like upstream's `metav1.StatusCause`.
 */

/** Kind of a field error, named after upstream's `metav1.CauseType` values. */
export type FieldErrorType =
  | 'FieldValueInvalid'
  | 'FieldValueRequired'
  | 'FieldValueNotSupported'
  | 'FieldValueDuplicate'
  | 'FieldValueNotFound'
  | 'FieldValueForbidden';

/** One problem found in an object, located by its field path. */
export interface FieldError {
  /** Dotted path from the object root, with list indexes: `spec.domain.devices.disks[0].name`. */
  path: string;
  /** What is wrong, in upstream's wording where upstream has a rule. */
  message: string;
  type?: FieldErrorType;
}

/**
 * An immutable field path builder mirroring Kubernetes' `field.Path`: `child` appends
 * `.name`, `index` appends `[i]`, `key` appends `[key]`.
 */
export class FieldPath {
  private constructor(private readonly text: string) {}

  /** A root path made of the given segments joined by dots (`new('spec', 'domain')`). */
  static of(...names: string[]): FieldPath {
    return new FieldPath(names.join('.'));
  }

  /** Appends one or more named children. */
  child(...names: string[]): FieldPath {
    if (names.length === 0) return this;
    const suffix = names.join('.');
    return new FieldPath(this.text === '' ? suffix : `${this.text}.${suffix}`);
  }

  /** Appends a list index. */
  index(i: number): FieldPath {
    return new FieldPath(`${this.text}[${i}]`);
  }

  /** Appends a map key. */
  key(k: string): FieldPath {
    return new FieldPath(`${this.text}[${k}]`);
  }

  toString(): string {
    return this.text;
  }
}

/** Builds a field error. */
export function fieldError(
  path: FieldPath | string,
  message: string,
  type: FieldErrorType = 'FieldValueInvalid',
): FieldError {
  return { path: String(path), message, type };
}

/** Formats one error as `<kind>/<name>: <field.path>: <message>` (the CLI's line format). */
export function formatFieldError(kind: string, name: string, err: FieldError): string {
  const where = err.path === '' ? '' : `${err.path}: `;
  return `${kind}/${name || '<unnamed>'}: ${where}${err.message}`;
}

/** Thrown by admission helpers when an object is invalid; carries every field error. */
export class ValidationError extends Error {
  constructor(
    readonly kind: string,
    readonly objectName: string,
    readonly errors: FieldError[],
  ) {
    super(errors.map((e) => formatFieldError(kind, objectName, e)).join('\n'));
    this.name = 'ValidationError';
  }
}
