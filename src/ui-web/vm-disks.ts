/**
 * The VM page's disks: each volume with its source, and for a DataVolume its phase and
 * import progress (CDI's `status.progress`, e.g. `45.20%`) as a progress bar.
 */
import type { Obj } from './api';
import { h } from './dom';

type Volume = Record<string, unknown> & { name?: string };

/** What a volume reads from, in a few words. */
function sourceOf(v: Volume): [kind: string, source: string] {
  const kind = Object.keys(v).find((k) => k !== 'name') ?? '';
  const src = (v[kind] ?? {}) as Record<string, unknown>;
  const named = src.image ?? src.claimName ?? src.name ?? src.secretName ?? src.path ?? '';
  return [kind, String(named)];
}

/** CDI's progress text as a fraction of 1, when it is one. */
export function progressOf(text: unknown): number | undefined {
  const m = /^(\d+(?:\.\d+)?)%$/.exec(String(text ?? ''));
  return m ? Math.min(1, Number(m[1]) / 100) : undefined;
}

/** A DataVolume's phase and, while it imports, a progress bar. */
export function dataVolumeCell(dv: Obj | undefined): Node | string {
  if (!dv) return 'not found';
  const phase = String(dv.status?.phase ?? 'Pending');
  const fraction = phase === 'Succeeded' ? 1 : progressOf(dv.status?.progress);
  return h(
    'span',
    { class: 'dv-status', 'data-dv': dv.metadata?.name ?? '', 'data-phase': phase },
    phase,
    fraction === undefined
      ? ''
      : h('progress', {
          max: 100,
          value: Math.round(fraction * 10000) / 100,
          'aria-label': `${dv.metadata?.name} import ${(fraction * 100).toFixed(1)}%`,
        }),
    fraction === undefined ? '' : ` ${(fraction * 100).toFixed(1)}%`,
  );
}

/** The disks section of VM `vm`, with the DataVolumes its volumes name. */
export function disksSection(vm: Obj, dataVolumes: Obj[]): Node {
  const volumes = (vm.spec?.template?.spec?.volumes ?? []) as Volume[];
  const dvs = new Map(dataVolumes.map((d) => [d.metadata?.name, d]));
  return h(
    'section',
    {},
    h('h3', {}, 'Disks'),
    volumes.length === 0
      ? h('p', {}, 'None.')
      : h(
          'table',
          { class: 'disks' },
          h(
            'tr',
            {},
            h('th', {}, 'Volume'),
            h('th', {}, 'Kind'),
            h('th', {}, 'Source'),
            h('th', {}, 'Status'),
          ),
          volumes.map((v) => {
            const [kind, source] = sourceOf(v);
            return h(
              'tr',
              {},
              h('td', {}, String(v.name ?? '')),
              h('td', {}, kind),
              h('td', {}, source),
              h('td', {}, kind === 'dataVolume' ? dataVolumeCell(dvs.get(source)) : ''),
            );
          }),
        ),
  );
}
