/**
 * Request paths that start in one namespace's subresource and walk to another's: `..`
 * segments spelled plainly, percent-encoded (`%2e%2e`, `.%2E`) and separated by `/`, an
 * encoded slash (`%2f`), a backslash or an encoded backslash (`%5c`), placed after the
 * namespace, after the name and after the subresource. virt-api must refuse every one of
 * them; a normalising router would follow them (issue 24).
 */

/** One subresource call: its resource, the subresource path after the name, and the method. */
export interface SubresourceCase {
  resource: 'virtualmachines' | 'virtualmachineinstances';
  sub: string;
  method: 'GET' | 'PUT';
  /** A websocket (console, vnc, portforward): opened by an Upgrade. */
  stream?: boolean;
}

/** Every VMI and VM subresource upstream's virtctl calls (served or not here). */
export const SUBRESOURCE_CASES: SubresourceCase[] = [
  ...['console', 'vnc', 'portforward/22', 'portforward/22/tcp'].map(
    (sub): SubresourceCase => ({ resource: 'virtualmachineinstances', sub, method: 'GET', stream: true }),
  ),
  ...[
    'pause',
    'unpause',
    'softreboot',
    'reset',
    'freeze',
    'unfreeze',
    'addvolume',
    'removevolume',
    'sev/setupsession',
    'sev/injectlaunchsecret',
  ].map((sub): SubresourceCase => ({ resource: 'virtualmachineinstances', sub, method: 'PUT' })),
  ...[
    'guestosinfo',
    'userlist',
    'filesystemlist',
    'vnc/screenshot',
    'sev/fetchcertchain',
    'sev/querylaunchmeasurement',
  ].map((sub): SubresourceCase => ({ resource: 'virtualmachineinstances', sub, method: 'GET' })),
  ...['start', 'stop', 'restart', 'migrate', 'addvolume', 'removevolume', 'memorydump'].map(
    (sub): SubresourceCase => ({ resource: 'virtualmachines', sub, method: 'PUT' }),
  ),
  { resource: 'virtualmachines', sub: 'expand-spec', method: 'GET' },
  { resource: 'virtualmachines', sub: 'portforward/22', method: 'GET', stream: true },
];

const BASE = '/apis/subresources.kubevirt.io/v1/namespaces';
const DOTS = ['..', '%2e%2e', '.%2E'];
const SEPARATORS = ['/', '%2f', '%2F', '\\', '%5c', '%5C'];

/** A path with a plain `.` segment (refused too, though it changes nothing). */
export function dotPath(ns: string, name: string, c: SubresourceCase): string {
  return `${BASE}/${ns}/${c.resource}/./${name}/${c.sub}`;
}

/**
 * Paths that begin in `from` (object `fromName`) and, resolved by a normaliser, name the
 * same subresource of `toName` in namespace `to`.
 */
export function traversalPaths(
  from: string,
  fromName: string,
  to: string,
  toName: string,
  c: SubresourceCase,
): string[] {
  const subSegs = c.sub.split('/');
  const target = [to, c.resource, toName, ...subSegs];
  // Where the walk starts, and how many segments it must climb back to `namespaces/`.
  const starts: Array<{ at: string[]; ups: number }> = [
    { at: [from], ups: 1 },
    { at: [from, c.resource, fromName], ups: 3 },
    { at: [from, c.resource, fromName, ...subSegs], ups: 3 + subSegs.length },
  ];
  const out: string[] = [];
  for (const { at, ups } of starts)
    for (const dot of DOTS)
      for (const sep of SEPARATORS) {
        const walk = [...Array<string>(ups).fill(dot), ...target].join(sep);
        out.push(`${BASE}/${at.join('/')}/${walk}`);
      }
  return out;
}
