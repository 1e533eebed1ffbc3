/**
 * Post-copy on the two-node cluster (issue 26, MigrationConfiguration), run by
 * migration.serial.test.ts last (the guest keeps dirtying memory), on whichever node its VM
 * runs (source S, the other node T). The guest
 * rewrites 16 MiB of random data in its RAM in a loop (far faster than the 1 MiB/s a
 * MigrationPolicy allows the migration), so pre-copy cannot converge. With a 3 s
 * completion timeout of 3 s per GiB of guest memory:
 * - without post-copy the source aborts the job at the timeout: the migration Failed with
 *   upstream's reason, the VMI still Running on S;
 * - with `allowPostCopy` (allowWorkloadDisruption follows it, as upstream) the source
 *   switches to post-copy at the timeout: the migration Succeeded in mode PostCopy, the
 *   same VMI Running on T, its console answering.
 * As upstream documents for post-copy, the target's QEMU (uid 107) needs userfaultfd: the
 * node's `vm.unprivileged_userfaultfd=1` (set here for the case, restored after; `down`
 * restores it too) and a seccomp profile allowing it (upstream's kubevirt/kubevirt.json,
 * asked for through the KubeVirt CR).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { VirtualMachineInstanceMigration } from '../../src/api/generated/types';
import { patchKubeVirtArgs } from '../support/cluster-pods';
import { waitFor } from '../support/wait';
import type { DrainContext } from './drain-case';
import { kubevirtReads } from './kubevirt-reads';
import { consoleAnswers } from './operator-cluster';

const SYSCTL = '/proc/sys/vm/unprivileged_userfaultfd';
const POLICY = 'dirty-slow';

/** The two migrations described above, with their assertions. */
export async function postCopyCase(c: DrainContext): Promise<void> {
  const { kubectl, ns } = c;
  const { get, vmi } = kubevirtReads(c.custom, ns, c.vm);
  const start = await vmi();
  const uid = start?.metadata?.uid;
  const source = start?.status?.nodeName ?? '';
  expect([c.nodeA, c.nodeB]).toContain(source);
  const target = source === c.nodeA ? c.nodeB : c.nodeA;

  const sysctlBefore = readFileSync(SYSCTL, 'utf8').trim();
  writeFileSync(SYSCTL, '1');
  const seccomp = (profile: unknown) =>
    kubectl(...patchKubeVirtArgs({ spec: { configuration: { seccompConfiguration: profile } } }));
  seccomp({
    virtualMachineInstanceProfile: { customProfile: { localhostProfile: 'kubevirt/kubevirt.json' } },
  });
  const policy = (spec: object) => {
    writeFileSync(
      join(c.dir, 'postcopy-policy.yaml'),
      JSON.stringify({
        apiVersion: 'migrations.kubevirt.io/v1alpha1',
        kind: 'MigrationPolicy',
        metadata: { name: POLICY },
        spec: {
          bandwidthPerMigration: '1Mi',
          completionTimeoutPerGiB: 3,
          selectors: { virtualMachineInstanceSelector: { 'kubevirt.io/vm': c.vm } },
          ...spec,
        },
      }),
    );
    kubectl('apply', '-f', join(c.dir, 'postcopy-policy.yaml'));
  };
  const migrate = async (name: string) => {
    writeFileSync(
      join(c.dir, `${name}.yaml`),
      JSON.stringify({
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstanceMigration',
        metadata: { name, namespace: ns },
        spec: { vmiName: c.vm },
      }),
    );
    kubectl('create', '-f', join(c.dir, `${name}.yaml`));
    return waitFor(
      `${name} final, its state kept`,
      async () => {
        const m = await get<VirtualMachineInstanceMigration>('virtualmachineinstancemigrations', name);
        const final = m?.status?.phase === 'Succeeded' || m?.status?.phase === 'Failed';
        return final && m?.status?.migrationState?.completed ? m : undefined;
      },
      180_000,
      500,
    );
  };
  try {
    // The drain case's policy (if still there) selects the same VM: this one replaces it.
    kubectl('delete', 'migrationpolicy', 'drain-slow', '--ignore-not-found');
    policy({});
    // 16 MiB of random bytes rewritten over and over in the guest's RAM (its root is a ramfs).
    const dirtier =
      '$(dd if=/dev/urandom of=/r bs=1M count=16 2>/dev/null; (while :; do cat /r >/s; done) >/dev/null 2>&1 & echo 5)';
    expect(await consoleAnswers(c.info, c.vm, { expr: dirtier, tag: 'DRT' })).toBe(5);

    const aborted = await migrate('postcopy-not-allowed');
    process.stderr.write(`[postcopy] without post-copy: ${JSON.stringify(aborted.status?.migrationState)}\n`);
    expect(aborted.status?.phase).toBe('Failed');
    expect(aborted.status?.migrationState).toMatchObject({
      failed: true,
      mode: 'PreCopy',
      migrationPolicyName: POLICY,
    });
    // 3 s per GiB of the guest's memory (upstream's message).
    expect(aborted.status?.migrationState?.failureReason).toMatch(
      /^Live migration is not completed after (3|6|9|12) sec and has been aborted$/,
    );
    expect((await vmi())?.status).toMatchObject({ phase: 'Running', nodeName: source });

    policy({ allowPostCopy: true });
    const t0 = performance.now();
    const moved = await migrate('postcopy-allowed');
    process.stderr.write(
      `[postcopy] with post-copy: ${Math.round(performance.now() - t0)} ms, ${JSON.stringify(moved.status?.migrationState)}\n`,
    );
    expect(moved.status?.phase).toBe('Succeeded');
    expect(moved.status?.migrationState).toMatchObject({
      completed: true,
      mode: 'PostCopy',
      sourceNode: source,
      targetNode: target,
    });
    expect(moved.status?.migrationState?.migrationConfiguration).toMatchObject({
      allowPostCopy: true,
      allowWorkloadDisruption: true,
    });
    const after = await vmi();
    expect(after?.metadata?.uid).toBe(uid);
    expect(after?.status).toMatchObject({ phase: 'Running', nodeName: target });
    // The guest runs on T: its shell answers (the same guest: the file it wrote is there).
    const size = await consoleAnswers(c.info, c.vm, { expr: '$(wc -c </r)', tag: 'PC' });
    expect(size).toBe(16 * 1024 * 1024);
  } finally {
    writeFileSync(SYSCTL, sysctlBefore);
    kubectl('delete', 'migrationpolicy', POLICY, '--ignore-not-found');
    seccomp(null);
  }
}
