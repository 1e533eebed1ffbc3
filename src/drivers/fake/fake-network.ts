/**
 * Where fake hosts can be reached for live migration: a process-wide map from a URI
 * (e.g. `fake://node2`) to a `FakeHost`, so one fake driver can migrate a domain to
 * another driver's host the way libvirt reaches a target daemon by URI.
 */
import type { FakeHost } from './fake-host';

const hosts = new Map<string, FakeHost>();

/** Makes `host` reachable at `uri` for fake migrations; returns a function that removes it. */
export function registerFakeHost(uri: string, host: FakeHost): () => void {
  if (!/^fake:\/\/[A-Za-z0-9.-]+\/?$/.test(uri)) {
    throw new TypeError(`fake host URI ${JSON.stringify(uri)}: must look like fake://<name>`);
  }
  hosts.set(uri, host);
  return () => {
    if (hosts.get(uri) === host) hosts.delete(uri);
  };
}

/** The host registered at `uri`, if any. */
export function fakeHostAt(uri: string): FakeHost | undefined {
  return hosts.get(uri);
}
