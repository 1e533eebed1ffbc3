/**
 * libvirt debug logs for one VMI (upstream's `debugLogs` label and
 * `kubevirt.io/libvirt-log-filters` annotation): admission refuses filters outside
 * libvirt's grammar with the field path, virt-controller renders the launcher's flag and
 * env, the launcher's args refuse what admission would, and the filter table is upstream's.
 * The daemon running with them is launcher-own-libvirt.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import {
  LIBVIRT_LOG_FILTERS_ANNOTATION,
  libvirtLogFiltersProblem,
} from '../../../src/api/launcher-log-labels';
import { validateVirtualMachineInstance } from '../../../src/api/validation/vmi';
import { LauncherArgsError, parseLauncherArgs } from '../../../src/controllers/common/launcher-args';
import {
  LIBVIRT_DEBUG_LOGS_ENV,
  libvirtLogFilters,
} from '../../../src/controllers/logging/libvirt-debug-logs';
import { renderLauncherPod } from '../../../src/controllers/virt-controller/services/pod-renderer';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });

function vmi(
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'dbg', namespace: 'default', uid: '1234-abcd', labels, annotations },
    spec: { domain: { resources: { requests: { memory: '128Mi' } }, devices: {} } },
  };
}

const compute = (v: VirtualMachineInstance, config = cfg) =>
  renderLauncherPod(v, config, { launcherImage: 'kubevirt-ts/launcher:dev' }).spec!.containers[0];

describe('libvirt log filters', () => {
  it("accepts libvirt's grammar and names what is wrong otherwise", () => {
    expect(libvirtLogFiltersProblem('1:qemu 3:remote 4:event 1:*')).toBeUndefined();
    expect(libvirtLogFiltersProblem('1:+qemu.qemu_monitor_json')).toBeUndefined();
    expect(libvirtLogFiltersProblem('')).toBe('names no filter');
    expect(libvirtLogFiltersProblem('1:qemu"\nlog_outputs="1:file:/etc/x')).toMatch(
      /not a libvirt log filter/,
    );
    expect(libvirtLogFiltersProblem('5:qemu')).toMatch(/"5:qemu", not a libvirt log filter/);
    expect(libvirtLogFiltersProblem('qemu')).toMatch(/not a libvirt log filter/);
  });

  it('admission refuses a bad annotation with its field path, and takes a good one', () => {
    const bad = validateVirtualMachineInstance(
      vmi({}, { [LIBVIRT_LOG_FILTERS_ANNOTATION]: '1:qemu"x' }),
      cfg,
    );
    expect(bad.map((e) => e.path)).toEqual([`metadata.annotations[${LIBVIRT_LOG_FILTERS_ANNOTATION}]`]);
    expect(bad[0].message).toMatch(/"1:qemu\\"x", not a libvirt log filter/);
    const good = validateVirtualMachineInstance(
      vmi({}, { [LIBVIRT_LOG_FILTERS_ANNOTATION]: '1:qemu 3:*' }),
      cfg,
    );
    expect(good.filter((e) => e.path.includes('annotations'))).toEqual([]);
  });

  it('admission refuses a logVerbosity label that is not a whole number, naming it', () => {
    const bad = validateVirtualMachineInstance(vmi({ logVerbosity: 'loud' }), cfg);
    expect(bad.map((e) => e.path)).toEqual(['metadata.labels[logVerbosity]']);
    expect(bad[0].message).toBe(
      'metadata.labels[logVerbosity] "loud" is not a verbosity (a whole number, 0-999)',
    );
    expect(
      validateVirtualMachineInstance(vmi({ logVerbosity: '6' }), cfg).filter((e) =>
        e.path.includes('labels'),
      ),
    ).toEqual([]);
  });

  it('virt-controller passes the annotation as --libvirt-log-filters and the label as LIBVIRT_DEBUG_LOGS', () => {
    const plain = compute(vmi());
    expect(plain.args).not.toContain('--libvirt-log-filters');
    expect(plain.env?.map((e) => e.name)).not.toContain(LIBVIRT_DEBUG_LOGS_ENV);

    const custom = compute(vmi({}, { [LIBVIRT_LOG_FILTERS_ANNOTATION]: '1:qemu 3:*' }));
    expect(parseLauncherArgs(custom.args!).libvirtLogFilters).toBe('1:qemu 3:*');

    expect(compute(vmi({ debugLogs: 'True' })).env).toContainEqual({
      name: LIBVIRT_DEBUG_LOGS_ENV,
      value: '1',
    });
    expect(compute(vmi({ debugLogs: 'no' })).env?.map((e) => e.name)).not.toContain(LIBVIRT_DEBUG_LOGS_ENV);
    // upstream: a launcher verbosity above 5 turns them on for every VMI.
    const verbose = createClusterConfig(
      { developerConfiguration: { logVerbosity: { virtLauncher: 6 } } },
      { hostArchitecture: 'amd64' },
    );
    expect(compute(vmi(), verbose).env).toContainEqual({ name: LIBVIRT_DEBUG_LOGS_ENV, value: '1' });
    // ... and so does the VMI's own logVerbosity label above 5.
    expect(compute(vmi({ logVerbosity: '6' })).env).toContainEqual({
      name: LIBVIRT_DEBUG_LOGS_ENV,
      value: '1',
    });
  });

  it("the launcher's args refuse filters admission would, naming the annotation", () => {
    const base = ['--namespace', 'default', '--name', 'dbg', '--uid', 'u1', '--grace-period-seconds', '30'];
    expect(() =>
      parseLauncherArgs([...base, '--libvirt-log-filters', '1:x"\nlog_outputs="1:file:/x']),
    ).toThrow(LauncherArgsError);
    expect(() => parseLauncherArgs([...base, '--libvirt-log-filters', '9:x'])).toThrow(
      /metadata\.annotations\[kubevirt\.io\/libvirt-log-filters\]/,
    );
  });

  it("chooses filters as upstream's getLibvirtLogFilters", () => {
    expect(libvirtLogFilters(undefined, 2, false)).toBeUndefined();
    expect(libvirtLogFilters('1:qemu', 2, false)).toBe('1:qemu');
    const withDebug = libvirtLogFilters(undefined, 2, true);
    expect(withDebug).toBe(
      '3:remote 4:event 3:util.json 3:util.object 3:util.dbus 3:util.netlink 3:node_device 3:rpc 3:access 1:*',
    );
    // At the threshold the most categories stay quiet; each step up quiets fewer.
    expect(libvirtLogFilters(undefined, 5, false)).toMatch(
      /3:qemu\.qemu_monitor_json 3:conf\.domain_addr 1:\*$/,
    );
    expect(libvirtLogFilters(undefined, 6, false)).toMatch(/3:cpu\.cpu 3:qemu\.qemu_monitor 1:\*$/);
    expect(libvirtLogFilters(undefined, 7, false)).toMatch(/3:util\.threadjob 3:cpu\.cpu 1:\*$/);
    expect(libvirtLogFilters(undefined, 9, false)).toBe(withDebug);
  });
});
