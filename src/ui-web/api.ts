/** The console server's API (same origin; the session cookie goes with every request). */

/** A Kubernetes Status cause: which field and why. */
export interface Cause {
  field?: string;
  message?: string;
  reason?: string;
}

/** An API refusal, with the Status the API answered. */
export class ApiFailure extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly causes: Cause[],
  ) {
    super(message);
  }
}

/** Any Kubernetes object, loosely. */
export interface Obj {
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    creationTimestamp?: string;
    resourceVersion?: string;
  };
  // biome-ignore lint/suspicious/noExplicitAny: API objects are shown, not typed, here.
  spec?: any;
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  status?: any;
  [k: string]: unknown;
}

/** One JSON call; throws {@link ApiFailure} with the API's message and causes. */
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const text = await res.text();
  let json: unknown = {};
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = { message: text };
  }
  if (!res.ok) {
    const s = json as { message?: string; details?: { causes?: Cause[] } };
    throw new ApiFailure(s.message ?? `HTTP ${res.status}`, res.status, s.details?.causes ?? []);
  }
  return json as T;
}

/** The websocket URL of a VM's console or VNC stream. */
export function streamUrl(ns: string, name: string, sub: 'console' | 'vnc'): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}/api/vms/${encodeURIComponent(ns)}/${encodeURIComponent(name)}/${sub}`;
}

/**
 * Watches VMs or VMIs through server-sent events; calls `onChange` with the current map
 * (key `ns/name`) after each event. Returns a function that stops it.
 */
export function watchObjects(
  kind: 'vm' | 'vmi',
  namespace: string,
  onChange: (objects: Map<string, Obj>) => void,
): () => void {
  const objects = new Map<string, Obj>();
  const q = new URLSearchParams({ kind, namespace });
  let es: EventSource | undefined;
  let stopped = false;
  const open = () => {
    es = new EventSource(`/api/watch?${q}`);
    // Each (re)connection starts with every current object again: forget the old ones, or
    // objects deleted while disconnected would stay.
    es.onopen = () => objects.clear();
    es.onmessage = (m) => {
      const e = JSON.parse(m.data) as { type: string; object: Obj };
      const key = `${e.object.metadata?.namespace}/${e.object.metadata?.name}`;
      if (e.type === 'DELETED') objects.delete(key);
      else objects.set(key, e.object);
      onChange(objects);
    };
    // The server ended the watch: start again from the current objects.
    es.addEventListener('end', () => {
      es?.close();
      objects.clear();
      if (!stopped) setTimeout(open, 500);
    });
  };
  open();
  return () => {
    stopped = true;
    es?.close();
  };
}
