/**
 * Every component's JSON log lines as upstream's: `--v` then the KubeVirt resource's
 * logVerbosity (per component; nodeVerbosity first for virt-handler) changing the level
 * while it is set and back to `--v` when dropped; VMI lines with kind, namespace, name,
 * uid; a failed reconcile naming its object with the uid from virt-controller's cache; the
 * launcher's verbosity through VIRT_LAUNCHER_LOG_VERBOSITY set by the pod renderer.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { validateKubeVirtConfiguration } from '../../../src/api/config/validate-configuration';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import {
  ComponentLog,
  configuredVerbosity,
  parseVerbosity,
} from '../../../src/controllers/logging/component-log';
import {
  LAUNCHER_VERBOSITY_ENV,
  launcherVerbosity,
  launcherVerbosityEnv,
} from '../../../src/controllers/logging/launcher-verbosity';
import { keyFields, reconcileErrorLogger } from '../../../src/controllers/logging/reconcile-log';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { cachedUid } from '../../../src/controllers/virt-controller/cached-uid';
import { renderLauncherPod } from '../../../src/controllers/virt-controller/services/pod-renderer';
import { type Harness, startHarness, waitFor } from '../virt-controller/services/embedded-harness';

/** A stream collecting JSON lines, parsed. */
function capture() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  });
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { stream, lines };
}

describe('ComponentLog', () => {
  it('writes JSON lines with the component, and the VMI fields on VMI lines', () => {
    const out = capture();
    const log = new ComponentLog('virt-controller', 2, out.stream);
    log.line('starting');
    log.forVmi({ metadata: { namespace: 'ns1', name: 'vm1', uid: 'u-1' } }).warn('pod not ready');
    log.logger.debug('not at v=2');
    expect(out.lines().map(({ time, ...rest }) => rest)).toEqual([
      { level: 'info', component: 'virt-controller', msg: 'starting' },
      {
        level: 'warn',
        component: 'virt-controller',
        kind: 'VirtualMachineInstance',
        namespace: 'ns1',
        name: 'vm1',
        uid: 'u-1',
        msg: 'pod not ready',
      },
    ]);
  });

  it("follows the KubeVirt resource's logVerbosity for the component, back to --v when dropped", () => {
    const out = capture();
    const log = new ComponentLog('virt-api', 2, out.stream);
    log.logger.debug('hidden 1');
    log.followConfig({ developerConfiguration: { logVerbosity: { virtAPI: 4, virtController: 9 } } });
    expect(log.v).toBe(4);
    log.logger.debug('shown');
    log.logger.trace('hidden 2');
    log.followConfig({ developerConfiguration: {} });
    expect(log.v).toBe(2);
    log.logger.debug('hidden 3');
    expect(out.lines().map((l) => [l.level, l.msg, l.verbosity])).toEqual([
      ['info', 'log verbosity changed', 4],
      ['debug', 'shown', undefined],
      ['info', 'log verbosity changed', 2],
    ]);
  });

  it("virt-handler takes its node's nodeVerbosity before virtHandler", () => {
    const cfg = { developerConfiguration: { logVerbosity: { virtHandler: 3, nodeVerbosity: { n1: 6 } } } };
    expect(configuredVerbosity(cfg, 'virt-handler', 'n1')).toBe(6);
    expect(configuredVerbosity(cfg, 'virt-handler', 'n2')).toBe(3);
    // nodeVerbosity is the handler's only.
    expect(configuredVerbosity(cfg, 'virt-launcher', 'n1')).toBeUndefined();
    const out = capture();
    const log = new ComponentLog('virt-handler', 2, out.stream);
    log.followConfig(cfg, 'n1');
    log.logger.trace('trace at 6');
    expect(out.lines().map((l) => l.msg)).toEqual(['log verbosity changed', 'trace at 6']);
  });

  it('refuses a --v that is not a verbosity, naming the flag', () => {
    expect(parseVerbosity('4')).toBe(4);
    expect(() => parseVerbosity('-1')).toThrow('--v: "-1" is not a verbosity (0 or more)');
    expect(() => parseVerbosity('lots')).toThrow('--v: "lots" is not a verbosity');
  });

  it("the resource's logVerbosity values are checked with their field path", () => {
    const errs = validateKubeVirtConfiguration({
      developerConfiguration: { logVerbosity: { virtLauncher: 2.5, nodeVerbosity: { n1: -3 } } },
    });
    expect(errs.map((e) => `${e.path}: ${e.message}`)).toEqual([
      'spec.configuration.developerConfiguration.logVerbosity.virtLauncher: Invalid value: 2.5: must be a whole number 0 or more',
      'spec.configuration.developerConfiguration.logVerbosity.nodeVerbosity.n1: Invalid value: -3: must be a whole number 0 or more',
    ]);
  });
});

describe("the launcher's verbosity", () => {
  const vmi: VirtualMachineInstance = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'default', uid: 'u-1' },
    spec: {
      domain: { resources: { requests: { memory: '128Mi' } }, devices: { autoattachPodInterface: false } },
    },
  };
  const opts = { launcherImage: 'kubevirt-ts/launcher:dev' };

  it('virt-controller puts logVerbosity.virtLauncher in the compute container, only when set', () => {
    const envOf = (cfg: ReturnType<typeof createClusterConfig>) =>
      renderLauncherPod(vmi, cfg, opts).spec?.containers?.find((c) => c.name === 'compute')?.env ?? [];
    const set = createClusterConfig(
      { developerConfiguration: { logVerbosity: { virtLauncher: 5 } } },
      { hostArchitecture: 'amd64' },
    );
    expect(envOf(set)).toContainEqual({ name: LAUNCHER_VERBOSITY_ENV, value: '5' });
    const unset = createClusterConfig({}, { hostArchitecture: 'amd64' });
    expect(envOf(unset).map((e) => e.name)).not.toContain(LAUNCHER_VERBOSITY_ENV);
    expect(launcherVerbosityEnv(unset)).toEqual([]);
  });

  it("the VMI's logVerbosity label wins over the resource's, as upstream's", () => {
    const set = createClusterConfig(
      { developerConfiguration: { logVerbosity: { virtLauncher: 5 } } },
      { hostArchitecture: 'amd64' },
    );
    const labelled = { ...vmi, metadata: { ...vmi.metadata, labels: { logVerbosity: '7' } } };
    const envOf = (cfg: ReturnType<typeof createClusterConfig>) =>
      renderLauncherPod(labelled, cfg, opts).spec?.containers?.find((c) => c.name === 'compute')?.env ?? [];
    expect(envOf(set)).toContainEqual({ name: LAUNCHER_VERBOSITY_ENV, value: '7' });
    expect(envOf(createClusterConfig({}, { hostArchitecture: 'amd64' }))).toContainEqual({
      name: LAUNCHER_VERBOSITY_ENV,
      value: '7',
    });
  });

  it('the launcher reads it, 2 when unset, 2 and the problem when it is not a number', () => {
    expect(launcherVerbosity({})).toEqual({ v: 2 });
    expect(launcherVerbosity({ [LAUNCHER_VERBOSITY_ENV]: '6' })).toEqual({ v: 6 });
    expect(launcherVerbosity({ [LAUNCHER_VERBOSITY_ENV]: 'loud' })).toEqual({
      v: 2,
      problem: 'VIRT_LAUNCHER_LOG_VERBOSITY="loud" is not a verbosity; using 2',
    });
  });
});

describe('a failed reconcile as a line', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('names the object by kind, namespace, name and the uid in the controller cache', async () => {
    h = await startHarness();
    const created = await h.store.create<KubeObject>(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'logged', namespace: 'default' },
      spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
    } as KubeObject);
    const ctrl = h.ctrl;
    await waitFor('the VMI in the cache', () => cachedUid(ctrl, 'vmi', 'default/logged'));
    expect(cachedUid(ctrl, 'vmi', 'default/logged')).toBe(created.metadata?.uid);
    expect(cachedUid(ctrl, 'vmi', 'default/absent')).toBeUndefined();
    expect(cachedUid(ctrl, 'nosuch', 'default/logged')).toBeUndefined();

    const out = capture();
    const onError = reconcileErrorLogger(new ComponentLog('virt-controller', 2, out.stream).logger, (c, k) =>
      cachedUid(ctrl, c, k),
    );
    onError('vmi', 'default/logged', new Error('pod create refused'));
    const [line] = out.lines();
    expect(line).toMatchObject({
      level: 'error',
      component: 'virt-controller',
      controller: 'vmi',
      kind: 'VirtualMachineInstance',
      namespace: 'default',
      name: 'logged',
      uid: created.metadata?.uid,
      reason: 'pod create refused',
      msg: 'reconcile failed',
    });
    expect(keyFields('migration', 'ns/m1')).toEqual({
      kind: 'VirtualMachineInstanceMigration',
      namespace: 'ns',
      name: 'm1',
    });
  });
});
