/**
 * Where the reconcile runtime's own warnings go (an informer's failed list or watch, a
 * reconcile or event handler that threw, a failed event write): the console by default;
 * a component that writes structured logs points it at its logger (ComponentLog's
 * `captureRuntime()`), so every line it prints is JSON. One sink per process, as klog's.
 */

/** A warning/error sink. */
export interface RuntimeLogSink {
  warn(message: string): void;
  error(message: string): void;
}

const consoleSink: RuntimeLogSink = {
  warn: (m) => console.warn(m),
  error: (m) => console.error(m),
};

let sink: RuntimeLogSink = consoleSink;

/** Sends the runtime's warnings to `s` (undefined: back to the console). */
export function setRuntimeLog(s: RuntimeLogSink | undefined): void {
  sink = s ?? consoleSink;
}

/** A runtime warning. */
export function runtimeWarn(message: string): void {
  sink.warn(message);
}

/** A runtime error. */
export function runtimeError(message: string): void {
  sink.error(message);
}
