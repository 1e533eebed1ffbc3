/**
 * A VMI's own launcher logging, as upstream's labels and annotation. `logVerbosity: "<n>"`
 * sets its launcher's verbosity over the cluster's (a whole number; anything else is
 * refused at admission, where upstream's pod render would fail later).
 *
 * libvirt debug logs for one VMI, as upstream's: the label `debugLogs: "true"` turns on
 * the launcher daemon's debug filters; the annotation `kubevirt.io/libvirt-log-filters`
 * gives filters of the user's own (libvirt's `log_filters` syntax: space-separated
 * `<level>:<category>`). The filters go into the daemon's configuration file as a quoted
 * string, so only that grammar passes admission: no quote, backslash or line break.
 */

/** upstream's `logVerbosity` VMI label. */
export const LOG_VERBOSITY_LABEL = 'logVerbosity';

/** Why `value` is not a launcher verbosity, or undefined when it is one (0-999). */
export function logVerbosityProblem(value: string): string | undefined {
  return /^\d{1,3}$/.test(value)
    ? undefined
    : `${JSON.stringify(value)} is not a verbosity (a whole number, 0-999)`;
}

/** upstream's `debugLogs` VMI label. */
export const DEBUG_LOGS_LABEL = 'debugLogs';
/** upstream's CustomLibvirtLogFiltersAnnotation. */
export const LIBVIRT_LOG_FILTERS_ANNOTATION = 'kubevirt.io/libvirt-log-filters';

/** One filter: level 1-4, then a category (letters, digits, `_`, `.`, `-`, `*`), `+` allowed before it. */
const FILTER = /^[1-4]:\+?[A-Za-z0-9_.*-]{1,128}$/;

/** Why `value` is not a libvirt `log_filters` list, or undefined when it is one. */
export function libvirtLogFiltersProblem(value: string): string | undefined {
  if (value.length > 4096) return 'is longer than 4096 characters';
  const filters = value.split(' ').filter((f) => f !== '');
  if (filters.length === 0) return 'names no filter';
  const bad = filters.find((f) => !FILTER.test(f));
  if (bad !== undefined)
    return `has ${JSON.stringify(bad)}, not a libvirt log filter (<level 1-4>:<category>, e.g. "1:qemu 3:*")`;
  return undefined;
}

/** Whether the VMI's `debugLogs` label asks for libvirt's debug logs (upstream: "true", any case). */
export function debugLogsRequested(labels: Record<string, string> | undefined): boolean {
  return labels?.[DEBUG_LOGS_LABEL]?.toLowerCase() === 'true';
}
