/**
 * The pure parts of the handler's migration side: which role a node plays, the launcher
 * report copied into migrationState, MigrateVirtualMachine's options from the migration
 * configuration, where the data stream goes, and the hand-over to the target node.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import {
  handedOver,
  migrationDataHost,
  migrationOptions,
  migrationRole,
  withSourceReport,
} from '../../../src/controllers/virt-handler/migration-sync';

const vmi = (nodeName: string, ms?: Record<string, unknown>): VirtualMachineInstance => ({
  metadata: {
    name: 'v',
    namespace: 'ns',
    uid: 'u',
    labels: { 'kubevirt.io/nodeName': nodeName, 'kubevirt.io/migrationTargetNodeName': 'n2', app: 'x' },
  },
  spec: { domain: { devices: {} } },
  status: { phase: 'Running', nodeName, migrationState: ms },
});
const ms = { migrationUid: 'm1', sourceNode: 'n1', targetNode: 'n2', targetPod: 'tp' };

describe('migrationRole', () => {
  it('source on the VMI node, target on the target node, nothing elsewhere or without a migration', () => {
    expect(migrationRole(vmi('n1', ms), 'n1')).toBe('source');
    expect(migrationRole(vmi('n1', ms), 'n2')).toBe('target');
    expect(migrationRole(vmi('n1', ms), 'n3')).toBeUndefined();
    expect(migrationRole(vmi('n1'), 'n1')).toBeUndefined();
    // Handed over: n2 runs it as its own.
    expect(migrationRole(vmi('n2', { ...ms, completed: true }), 'n2')).toBeUndefined();
  });
});

describe('withSourceReport', () => {
  const started = {
    uid: 'm1',
    role: 'source' as const,
    startTimestamp: '2026-11-29T17:00:00.123Z',
    mode: 'PreCopy' as const,
  };
  it('copies the start, the end, the mode; completed is left to the hand-over', () => {
    expect(
      withSourceReport(ms, { ...started, endTimestamp: '2026-11-29T17:00:09.900Z', completed: true }),
    ).toEqual({
      ...ms,
      startTimestamp: '2026-11-29T17:00:00Z',
      endTimestamp: '2026-11-29T17:00:09Z',
      mode: 'PreCopy',
    });
  });
  it('a failure ends the migration: completed and failed, with the reason and abort status', () => {
    expect(
      withSourceReport(ms, {
        ...started,
        endTimestamp: '2026-11-29T17:00:02Z',
        failed: true,
        failureReason: 'Live migration aborted',
        abortStatus: 'Succeeded',
      }),
    ).toEqual({
      ...ms,
      startTimestamp: '2026-11-29T17:00:00Z',
      endTimestamp: '2026-11-29T17:00:02Z',
      mode: 'PreCopy',
      abortStatus: 'Succeeded',
      completed: true,
      failed: true,
      failureReason: 'Live migration aborted',
    });
  });
  it('keeps timestamps already written', () => {
    expect(withSourceReport({ ...ms, startTimestamp: '2026-11-29T16:00:00Z' }, started).startTimestamp).toBe(
      '2026-11-29T16:00:00Z',
    );
  });
});

describe('migrationOptions', () => {
  it('maps the cluster configuration to upstream MigrationOptions, the policy configuration winning', () => {
    expect(
      migrationOptions(
        {
          bandwidthPerMigration: '64Mi',
          progressTimeout: 150,
          completionTimeoutPerGiB: 800,
          allowAutoConverge: true,
          unsafeMigrationOverride: true,
        },
        {
          ...ms,
          targetNodeAddress: '10.0.0.7',
          migrationConfiguration: { allowPostCopy: true, progressTimeout: 30, maxDowntimeMs: 150 },
        },
        '<domain/>',
      ),
    ).toEqual({
      Bandwidth: '64Mi',
      ProgressTimeout: 30,
      CompletionTimeoutPerGiB: 800,
      UnsafeMigration: true,
      AllowAutoConverge: true,
      AllowPostCopy: true,
      // Unset, it follows allowPostCopy (upstream's backward compatibility).
      AllowWorkloadDisruption: true,
      MaxDowntimeMs: 150,
      MigrateURI: 'tcp://10.0.0.7',
      TargetDomainXML: '<domain/>',
    });
  });
  it('a libvirt URI address is the TargetURI; a local unix socket sends the data over loopback', () => {
    const uri = 'qemu+unix:///system?socket=/tmp/kvd-x/run/libvirt-sock';
    const o = migrationOptions({}, { ...ms, targetNodeAddress: uri }, '');
    expect(o.TargetURI).toBe(uri);
    expect(o.MigrateURI).toBe('tcp://127.0.0.1');
    expect(o.TargetDomainXML).toBeUndefined();
  });
});

describe('migrationDataHost', () => {
  it.each([
    ['10.0.0.7', '10.0.0.7'],
    ['node2:16509', 'node2'],
    ['[fd00::7]:16509', '[fd00::7]'],
    ['qemu+tcp://node2:16509/system', 'node2'],
    ['qemu+ssh://root@node2/system', 'node2'],
    ['qemu+unix:///system?socket=/run/x/libvirt-sock', '127.0.0.1'],
    ['qemu:///system', undefined],
    ['', undefined],
    ['not a host!', undefined],
  ])('%s -> %s', (addr, host) => {
    expect(migrationDataHost(addr)).toBe(host);
  });
});

describe('handedOver', () => {
  it('moves nodeName and the nodeName label to the target, drops the target label, completes the migration', () => {
    const before = vmi('n1', { ...ms, targetNodeDomainReadyTimestamp: '2026-11-29T17:00:10Z' });
    const after = handedOver(before, before.status?.migrationState ?? {});
    expect(after.status?.nodeName).toBe('n2');
    expect(after.metadata?.labels).toEqual({ 'kubevirt.io/nodeName': 'n2', app: 'x' });
    expect(after.status?.migrationState).toEqual({
      ...ms,
      targetNodeDomainReadyTimestamp: '2026-11-29T17:00:10Z',
      completed: true,
    });
    expect(after.status?.phase).toBe('Running');
    // The input is left alone.
    expect(before.status?.nodeName).toBe('n1');
  });

  it('clears status.evacuationNodeName: the VMI left the node it was evacuated from (upstream ackMigrationCompletion)', () => {
    const before = vmi('n1', ms);
    before.status = { ...before.status, evacuationNodeName: 'n1' };
    const after = handedOver(before, ms);
    expect(after.status?.nodeName).toBe('n2');
    expect(after.status && 'evacuationNodeName' in after.status).toBe(false);
    expect(before.status.evacuationNodeName).toBe('n1');
  });

  it("drops the launcher image record (upstream ackMigrationCompletion): the VMI is not outdated on the source's image", () => {
    const before = vmi('n1', ms);
    before.metadata = {
      ...before.metadata,
      labels: { ...before.metadata?.labels, 'kubevirt.io/outdatedLauncherImage': '' },
    };
    before.status = { ...before.status, launcherContainerImageVersion: 'reg/virt-launcher:old' };
    const after = handedOver(before, ms);
    expect(after.metadata?.labels).toEqual({ 'kubevirt.io/nodeName': 'n2', app: 'x' });
    expect(after.status && 'launcherContainerImageVersion' in after.status).toBe(false);
  });
});
