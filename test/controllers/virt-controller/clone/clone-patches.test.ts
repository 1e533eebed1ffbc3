/** The patches a clone hands its restore: filters as upstream's, MAC/serial/UUID handling. */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachine } from '../../../../src/api/generated/types';
import { validateVirtualMachineRestore } from '../../../../src/api/validation/snapshot';
import {
  filteredOutKeys,
  generatePatches,
} from '../../../../src/controllers/virt-controller/clone/clone-patches';

const keys = { app: '1', 'kubevirt.io/a': '2', 'kubevirt.io/b': '3', abc: '4', 'a~x/y': '5' };

describe('clone label/annotation filters', () => {
  it('keeps what a filter matches unless a negation matches it; no filters keep all', () => {
    expect(filteredOutKeys(keys, undefined)).toEqual([]);
    expect(filteredOutKeys(keys, ['*'])).toEqual([]);
    expect(filteredOutKeys(keys, [])).toEqual(Object.keys(keys));
    expect(filteredOutKeys(keys, ['*', '!kubevirt.io/*'])).toEqual(['kubevirt.io/a', 'kubevirt.io/b']);
    expect(filteredOutKeys(keys, ['kubevirt.io/*', '!kubevirt.io/b'])).toEqual([
      'app',
      'kubevirt.io/b',
      'abc',
      'a~x/y',
    ]);
    // Only negations: nothing is included (upstream's), so everything goes.
    expect(filteredOutKeys({ app: '1' }, ['!other'])).toEqual(['app']);
  });

  it('reads filter characters literally (never as a regular expression)', () => {
    expect(filteredOutKeys(keys, ['a.c'])).toEqual(Object.keys(keys));
    expect(filteredOutKeys({ 'x(a+)+': '1', aaaa: '2' }, ['(a+)+'])).toEqual(['aaaa']);
  });
});

describe('generatePatches', () => {
  const vm = (fw?: object, ifaces = [{ name: 'default', masquerade: {} }]) =>
    ({
      metadata: {
        name: 'v',
        labels: { 'a~x/y': '1' },
        annotations: { 'restore.kubevirt.io/lastRestoreUID': 'r-1', other: 'x' },
      },
      spec: {
        template: { spec: { domain: { devices: { interfaces: ifaces }, ...(fw ? { firmware: fw } : {}) } } },
      },
    }) as unknown as VirtualMachine;

  it('no firmware and no MAC set: nothing to clear; user patches come last', () => {
    expect(
      generatePatches(vm(), {
        source: { kind: 'VirtualMachine', name: 'v' },
        patches: ['{"op":"test","path":"/x","value":1}'],
      }),
    ).toEqual(['{"op":"test","path":"/x","value":1}']);
  });

  it('a serial asked for on a source with no firmware block adds the block with it', () => {
    expect(
      generatePatches(vm(), { source: { kind: 'VirtualMachine', name: 'v' }, newSMBiosSerial: 's-1' }),
    ).toEqual(['{"op":"add","path":"/spec/template/spec/domain/firmware","value":{"serial":"s-1"}}']);
  });

  it('sets given MACs and serial, removes other MACs and the UUID, escapes keys, keeps the restore annotation', () => {
    const p = generatePatches(
      vm({ serial: 's', uuid: 'u' }, [
        { name: 'default', masquerade: {}, macAddress: '02:00:00:00:00:01' } as never,
        { name: 'b', bridge: {}, macAddress: '02:00:00:00:00:02' } as never,
      ]),
      {
        source: { kind: 'VirtualMachine', name: 'v' },
        newMacAddresses: { b: '02:00:00:00:00:0b' },
        labelFilters: ['!a~x'],
        annotationFilters: ['nothing'],
      },
    ).map((s) => JSON.parse(s));
    expect(p).toEqual([
      { op: 'remove', path: '/spec/template/spec/domain/devices/interfaces/0/macAddress' },
      {
        op: 'add',
        path: '/spec/template/spec/domain/devices/interfaces/1/macAddress',
        value: '02:00:00:00:00:0b',
      },
      { op: 'remove', path: '/spec/template/spec/domain/firmware/serial' },
      { op: 'remove', path: '/metadata/labels/a~0x~1y' },
      { op: 'remove', path: '/metadata/annotations/other' },
      { op: 'remove', path: '/spec/template/spec/domain/firmware/uuid' },
    ]);
  });

  it.each([
    ['a firmware block', { serial: 's', uuid: 'u' }],
    ['no firmware block', undefined],
  ])("passes the restore webhook's patch rules (a MAC value holds ':'), source with %s", (_, fw) => {
    const patches = generatePatches(
      vm(fw, [{ name: 'default', masquerade: {}, macAddress: '02:00:00:00:00:01' } as never]),
      {
        source: { kind: 'VirtualMachine', name: 'v' },
        newMacAddresses: { default: '02:00:00:00:00:0a' },
        newSMBiosSerial: 'a:b,c',
        labelFilters: ['nothing'],
      },
    );
    const restore = {
      metadata: { name: 'r', namespace: 'default' },
      spec: {
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'v2' },
        virtualMachineSnapshotName: 's',
        patches,
      },
    };
    expect(
      validateVirtualMachineRestore(
        restore,
        undefined,
        createClusterConfig({}, { hostArchitecture: 'amd64' }),
      ),
    ).toEqual([]);
  });
});
