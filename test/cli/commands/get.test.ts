import { describe, expect, it } from 'vitest';
import { describeText } from '../../../src/cli/commands/describe';
import { age, resolveKind, rowsOf, table } from '../../../src/cli/commands/get';
import { listedRows } from '../../../src/cli/commands/get-kinds';
import type { KubeObject } from '../../../src/controllers/runtime/types';

const now = Date.parse('2026-01-01T01:00:00Z');

describe('get and describe', () => {
  it('formats ages as kubectl does', () => {
    expect(age('2026-01-01T00:59:15Z', now)).toBe('45s');
    expect(age('2026-01-01T00:30:00Z', now)).toBe('30m');
    expect(age('2025-12-31T20:00:00Z', now)).toBe('5h');
    expect(age('2025-12-25T01:00:00Z', now)).toBe('7d');
  });

  it('prints VMI rows with kubectl columns, escaping control characters in names', () => {
    const vmi = {
      metadata: { name: 'a\x1b[2J', namespace: 'ns', creationTimestamp: '2026-01-01T00:59:00Z' },
      status: {
        phase: 'Running',
        nodeName: 'local',
        interfaces: [{ ipAddress: '10.0.2.2' }],
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    } as unknown as KubeObject;
    expect(table(rowsOf('vmi', [vmi], true, false, now))).toBe(
      [
        'NAMESPACE   NAME       AGE   PHASE     IP         NODENAME   READY',
        'ns          a\\x1b[2J   60s   Running   10.0.2.2   local      True',
      ].join('\n'),
    );
  });

  it('prints VM rows and resolves kind names', () => {
    const vm = {
      metadata: { name: 'v', creationTimestamp: '2026-01-01T00:00:00Z' },
      status: { printableStatus: 'Paused' },
    };
    expect(rowsOf('vm', [vm as KubeObject], false, false, now)).toEqual([
      ['NAME', 'AGE', 'STATUS', 'READY'],
      ['v', '60m', 'Paused', 'False'],
    ]);
    expect(resolveKind('VirtualMachineInstances').kind).toBe('vmi');
    expect(() => resolveKind('pods')).toThrow(
      'resource type "pods": expected vms, vmis or one of virtualmachineinstancereplicasets, virtualmachineinstancemigrations, kubevirts, virtualmachineinstancetypes, virtualmachineclusterinstancetypes, virtualmachinepreferences, virtualmachineclusterpreferences, virtualmachinepools',
    );
  });

  it('lists the other kinds local mode serves with their printer columns', () => {
    const pool = resolveKind('vmpools');
    expect(pool.kind === 'other' && pool.type.plural).toBe('virtualmachinepools');
    if (pool.kind !== 'other') throw new Error('vmpools resolved to a VM kind');
    const p = {
      metadata: { name: 'p', namespace: 'ns', creationTimestamp: '2026-01-01T00:00:00Z' },
      spec: { replicas: 3 },
      status: { replicas: 3, readyReplicas: 2 },
    } as unknown as KubeObject;
    expect(listedRows(pool.listed, [p], true, false, (ts) => age(ts, now))).toEqual([
      ['NAMESPACE', 'NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE'],
      ['ns', 'p', '3', '3', '2', '60m'],
    ]);
    // Cluster-scoped, no printer columns: NAME and AGE, no NAMESPACE even with -A.
    const cit = resolveKind('VirtualMachineClusterInstancetypes');
    expect(cit.type).toMatchObject({ kind: 'VirtualMachineClusterInstancetype', namespaced: false });
    if (cit.kind !== 'other') throw new Error('cluster instancetypes resolved to a VM kind');
    const c = { metadata: { name: 'c\x1b', creationTimestamp: '2026-01-01T00:59:00Z' } } as KubeObject;
    expect(listedRows(cit.listed, [c], true, false, (ts) => age(ts, now))).toEqual([
      ['NAME', 'AGE'],
      ['c\\x1b', '60s'],
    ]);
    for (const [name, kind] of [
      ['vmpref', 'VirtualMachinePreference'],
      ['vmcps', 'VirtualMachineClusterPreference'],
      ['virtualmachineinstancetype', 'VirtualMachineInstancetype'],
      ['vmirs', 'VirtualMachineInstanceReplicaSet'],
    ]) {
      expect(resolveKind(name).type.kind, name).toBe(kind);
    }
  });

  it('describes an object with its events', () => {
    const text = describeText(
      {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: { name: 'v', namespace: 'd', labels: { a: 'b' } },
      } as KubeObject,
      [
        {
          metadata: { name: 'e' },
          type: 'Normal',
          reason: 'SuccessfulCreate',
          message: 'made it',
          source: { component: 'virt-controller' },
          lastTimestamp: '2026-01-01T00:59:50Z',
        } as KubeObject,
      ],
      now,
    );
    expect(text).toContain('Labels:      a=b\n');
    expect(text).toContain('Normal   SuccessfulCreate   10s   virt-controller   made it');
  });
});
