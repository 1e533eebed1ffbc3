import { describe, expect, it } from 'vitest';
import { parseCompletedJob } from '../../bench/migration-virsh';

describe("bench:migration's reading of `virsh domjobinfo --completed --rawstats`", () => {
  it('takes the raw downtime, elapsed time and data processed', () => {
    const text = [
      'Job type:         Completed',
      'Operation:        Incoming migration',
      'Time elapsed:     2210         ms',
      'Data processed:   98.512 MiB',
      'Total downtime:   41           ms',
      '',
      'type=3',
      'operation=3',
      'time_elapsed=2210',
      'downtime=41',
      'data_processed=103296000',
    ].join('\n');
    const job = parseCompletedJob(text);
    expect(job.downtimeMs).toBe(41);
    expect(job.jobMs).toBe(2210);
    expect(job.mib).toBeCloseTo(103296000 / 1024 ** 2, 3);
  });

  it('falls back to the human lines, and refuses output without them', () => {
    expect(
      parseCompletedJob('Time elapsed:     100 ms\nData processed:   2.000 MiB\nTotal downtime:   7 ms\n'),
    ).toEqual({ downtimeMs: 7, jobMs: 100, mib: 2 });
    expect(() => parseCompletedJob('Job type:         None\n')).toThrow(
      /no completed migration job statistics/,
    );
  });
});
