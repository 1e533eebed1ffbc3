import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstanceMigration } from '../../../../src/api/generated/types';
import { migrationBackoffMs } from '../../../../src/controllers/virt-controller/migration/backoff';

const evac = { 'kubevirt.io/evacuationMigration': 'node02' };
const mig = (
  name: string,
  created: string,
  phase?: string,
  failedAt?: string,
  annotations: Record<string, string> | undefined = evac,
): VirtualMachineInstanceMigration => ({
  metadata: { name, uid: name, creationTimestamp: created, annotations },
  spec: { vmiName: 'v' },
  status: phase
    ? {
        phase,
        phaseTransitionTimestamps: failedAt ? [{ phase: 'Failed', phaseTransitionTimestamp: failedAt }] : [],
      }
    : undefined,
});

describe("migrationBackoffMs (upstream's handleMigrationBackoff)", () => {
  const now = new Date('2026-12-04T20:35:00Z');

  it('waits 20 s after the last failed evacuation migration of the VMI', () => {
    const failed = mig('a', '2026-12-04T20:34:30Z', 'Failed', '2026-12-04T20:34:50Z');
    const next = mig('b', '2026-12-04T20:34:51Z');
    expect(migrationBackoffMs(next, [failed, next], now)).toBe(10_000);
    expect(migrationBackoffMs(next, [failed, next], new Date('2026-12-04T20:35:10Z'))).toBe(0);
  });

  it('doubles for each failure since the last success, from the newest failure', () => {
    const ok = mig('a', '2026-12-04T20:30:00Z', 'Succeeded');
    const f1 = mig('b', '2026-12-04T20:31:00Z', 'Failed', '2026-12-04T20:31:05Z');
    const f2 = mig('c', '2026-12-04T20:32:00Z', 'Failed', '2026-12-04T20:34:40Z');
    const next = mig('d', '2026-12-04T20:34:45Z');
    // f2 and f1 failed: 20 s then 40 s, from f2's failure.
    expect(migrationBackoffMs(next, [ok, f1, f2, next], now)).toBe(20_000);
    // A success in between resets: only f2 counts.
    const ok2 = mig('e', '2026-12-04T20:31:30Z', 'Succeeded');
    expect(migrationBackoffMs(next, [ok, f1, ok2, f2, next], now)).toBe(0);
  });

  it('never for user migrations, nor for an evacuation migration that is not the newest', () => {
    const failed = mig('a', '2026-12-04T20:34:30Z', 'Failed', '2026-12-04T20:34:50Z');
    const user = mig('b', '2026-12-04T20:34:51Z', undefined, undefined, {});
    expect(migrationBackoffMs(user, [failed, user], now)).toBe(0);
    const older = mig('c', '2026-12-04T20:34:52Z');
    const newer = mig('d', '2026-12-04T20:34:53Z');
    expect(migrationBackoffMs(older, [failed, older, newer], now)).toBe(0);
  });
});
