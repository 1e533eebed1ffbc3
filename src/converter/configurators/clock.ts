/** Clock offset (UTC with an adjustment, or a timezone) and timers (rtc, pit, hpet, kvm, hyperv). */
import type { Configurator, Conversion } from '../conversion';
import type { Timer } from '../domain/types';

const TICK_POLICIES = ['delay', 'catchup', 'merge', 'discard'] as const;

function tickPolicy(c: Conversion, value: string | undefined, path: string): Timer['tickpolicy'] {
  if (value === undefined || value === '') return undefined;
  if (!(TICK_POLICIES as readonly string[]).includes(value)) {
    c.fail(path, `'${c.line(value, path)}' is not one of ${TICK_POLICIES.join(', ')}`);
  }
  return value as Timer['tickpolicy'];
}

const present = (p: boolean | undefined) => (p === false ? 'no' : 'yes');

export const clockConfigurator: Configurator = {
  name: 'clock',
  configure(c: Conversion) {
    const clock = c.spec.domain.clock;
    if (!clock) {
      c.domain.clock = { offset: 'utc' };
      return;
    }
    const base = 'spec.domain.clock';
    if (clock.timezone !== undefined) {
      c.line(clock.timezone, `${base}.timezone`);
      if (!/^[A-Za-z0-9_+\-/]+$/.test(clock.timezone))
        c.fail(`${base}.timezone`, `'${clock.timezone}' is not a timezone name`);
      c.domain.clock = { offset: 'timezone', timezone: clock.timezone };
    } else {
      const seconds = clock.utc?.offsetSeconds;
      c.domain.clock = { offset: 'utc', adjustment: seconds ? String(seconds) : undefined };
    }
    const t = clock.timer;
    if (!t) return;
    const timers: Timer[] = [];
    if (t.rtc) {
      const track = t.rtc.track;
      if (track !== undefined && track !== 'guest' && track !== 'wall')
        c.fail(
          `${base}.timer.rtc.track`,
          `'${c.line(track, `${base}.timer.rtc.track`)}' is not one of guest, wall`,
        );
      timers.push({
        name: 'rtc',
        tickpolicy: tickPolicy(c, t.rtc.tickPolicy, `${base}.timer.rtc.tickPolicy`),
        present: present(t.rtc.present),
        track: track as Timer['track'],
      });
    }
    if (t.pit)
      timers.push({
        name: 'pit',
        tickpolicy: tickPolicy(c, t.pit.tickPolicy, `${base}.timer.pit.tickPolicy`),
        present: present(t.pit.present),
      });
    if (t.hpet)
      timers.push({
        name: 'hpet',
        tickpolicy: tickPolicy(c, t.hpet.tickPolicy, `${base}.timer.hpet.tickPolicy`),
        present: present(t.hpet.present),
      });
    if (t.kvm) timers.push({ name: 'kvmclock', present: present(t.kvm.present) });
    if (t.hyperv) timers.push({ name: 'hypervclock', present: present(t.hyperv.present) });
    if (timers.length > 0) c.domain.clock.timer = timers;
  },
};
