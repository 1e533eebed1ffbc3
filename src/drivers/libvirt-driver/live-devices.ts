/** What the console and VNC lookups read from a live domain's XML. */
import { XMLParser } from 'fast-xml-parser';
import type { ConsoleEndpoint, VncEndpoint } from '../driver';
import { DriverError } from '../errors';

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  isArray: (name) => ['serial', 'console', 'graphics', 'listen'].includes(name),
});

/** The parts of a live domain's `<devices>` the console and VNC lookups read (fast-xml-parser shape). */
interface LiveChar {
  '@_type'?: string;
  '@_tty'?: string;
  source?: { '@_path'?: string };
}
interface LiveGraphics {
  '@_type'?: string;
  '@_port'?: string;
  '@_listen'?: string;
  '@_socket'?: string;
  listen?: Array<{ '@_type'?: string; '@_socket'?: string }>;
}
interface LiveDevices {
  serial?: LiveChar[];
  console?: LiveChar[];
  graphics?: LiveGraphics[];
}

function parse(live: { name: string; text: string }): { name: string; devices: LiveDevices } {
  return { name: live.name, devices: xml.parse(live.text)?.domain?.devices ?? {} };
}

/** The serial console of a live domain's XML: a unix socket or a pty. */
export function consoleOf(live: { name: string; text: string }): ConsoleEndpoint {
  const { name, devices } = parse(live);
  for (const s of [...(devices.serial ?? []), ...(devices.console ?? [])]) {
    const path = s.source?.['@_path'];
    if (s['@_type'] === 'unix' && path) return { kind: 'unix', path };
    if (s['@_type'] === 'pty' && (path || s['@_tty'])) return { kind: 'pty', path: path || s['@_tty'] };
  }
  throw new DriverError('NotFound', `domain ${name}: has no unix or pty serial console`);
}

/** The VNC endpoint of a live domain's XML: a unix socket or a TCP port. */
export function vncOf(live: { name: string; text: string }): VncEndpoint {
  const { name, devices } = parse(live);
  const g = (devices.graphics ?? []).find((x) => x['@_type'] === 'vnc');
  if (!g) throw new DriverError('NotFound', `domain ${name}: has no VNC graphics device`);
  const sock = g['@_socket'] ?? g.listen?.find((l) => l['@_type'] === 'socket')?.['@_socket'];
  if (sock) return { kind: 'unix', path: sock };
  const port = Number(g['@_port']);
  if (!(port > 0))
    throw new DriverError('InvalidState', `domain ${name}: VNC has no port yet (is it running?)`);
  return { kind: 'tcp', host: g['@_listen'] ?? '127.0.0.1', port };
}
