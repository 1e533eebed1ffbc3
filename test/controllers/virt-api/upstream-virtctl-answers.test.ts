/**
 * What upstream's virtctl reads from virt-api, on the embedded store over real HTTPS:
 * the 409/404 texts worded as upstream's (errors.NewConflict / NewNotFound on
 * kubevirt.io, which virtctl prints and scripts match on), the version (semver whose
 * major.minor is the served KubeVirt release, so virtctl prints no mismatch banner), a
 * forced stop/restart lowering the VMI's grace period as upstream's, and the VM-level
 * portforward (`virtctl port-forward vm/NAME`, `ssh user@vm/NAME`). expand-vm-spec and
 * objectgraph: vm-spec-answers.test.ts.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startVirtApiHarness,
  type VirtApiHarness,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from './virt-api-harness';
import { vmObjects } from './vm-objects';

const NS = 'ns1';
const base = `/apis/subresources.kubevirt.io/v1/namespaces/${NS}`;
let h: VirtApiHarness;
let echo: Server;
let echoPort = 0;

const { vm, vmi } = vmObjects(() => h, NS);

const paused = { type: 'Paused', status: 'True' };

beforeAll(async () => {
  h = await startVirtApiHarness();
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoPort = (echo.address() as { port: number }).port;
  const running = { phase: 'Running', nodeName: 'node1' };
  await vm('vm-run', 'Always', { created: true });
  await vmi('vm-run', running);
  await vm('vm-restart', 'Always', { created: true });
  await vmi('vm-restart', running);
  await vm('vm-off', 'Halted');
  await vm('vm-always-off', 'Always');
  await vm('vm-stopping', 'Halted', { created: true });
  // A finalizer keeps it while it is deleted (virt-controller's, in a cluster).
  await vmi('vm-stopping', running, 180, ['kubevirt.io/test']);
  await vm('vm-sched', 'Always', { created: true });
  await vmi('vm-sched', { phase: 'Scheduled' });
  await vm('vm-paused', 'Always', { created: true });
  await vmi('vm-paused', { ...running, conditions: [paused] });
  await vm('vm-manual', 'Manual', { stateChangeRequests: [{ action: 'Stop' }] });
  await vm('vm-pf', 'Always', { created: true });
  await vmi('vm-pf', { ...running, interfaces: [{ name: 'default', ipAddress: '127.0.0.1' }] });
  await vm('vm-notstarted', 'Always');
  await vmi('vm-alien', running); // a VMI no VM owns
  await vm('vm-alien', 'Always', { created: true });
});

afterAll(async () => {
  echo?.close();
  await h?.close();
});

const conflictOn = (resource: string, name: string, why: string) => ({
  code: 409,
  body: expect.objectContaining({
    kind: 'Status',
    reason: 'Conflict',
    message: `Operation cannot be fulfilled on ${resource}.kubevirt.io "${name}": ${why}`,
    details: { name, group: 'kubevirt.io', kind: resource },
  }),
});

describe("virt-api's refusals, worded as upstream's", () => {
  const vmOp = (name: string, op: string) => `${base}/virtualmachines/${name}/${op}`;
  const vmiOp = (name: string, op: string) => `${base}/virtualmachineinstances/${name}/${op}`;
  it.each([
    [
      'start of a running VM',
      'PUT',
      vmOp('vm-run', 'start'),
      'virtualmachine',
      'vm-run',
      'VM is already running',
    ],
    [
      'start of an Always VM',
      'PUT',
      vmOp('vm-always-off', 'start'),
      'virtualmachine',
      'vm-always-off',
      'Always does not support manual start requests',
    ],
    [
      'start with a request pending',
      'PUT',
      vmOp('vm-manual', 'start'),
      'virtualmachine',
      'vm-manual',
      'unable to complete request: stop/start already underway',
    ],
    ['stop of a stopped VM', 'PUT', vmOp('vm-off', 'stop'), 'virtualmachine', 'vm-off', 'VM is not running'],
    [
      'stop of a stopping VM without a shorter grace period',
      'PUT',
      vmOp('vm-stopping', 'stop'),
      'virtualmachine',
      'vm-stopping',
      'Halted only supports manual stop requests with a shorter graceperiod',
    ],
    [
      'restart of a Halted VM',
      'PUT',
      vmOp('vm-off', 'restart'),
      'virtualmachine',
      'vm-off',
      'RunStategy Halted does not support manual restart requests',
    ],
    [
      'restart of a VM without VMI',
      'PUT',
      vmOp('vm-always-off', 'restart'),
      'virtualmachine',
      'vm-always-off',
      'VM is not running: Halted',
    ],
    [
      'migrate of a VM not running',
      'PUT',
      vmOp('vm-sched', 'migrate'),
      'virtualmachine',
      'vm-sched',
      'VM is not running',
    ],
    [
      'pause of a VMI not running',
      'PUT',
      vmiOp('vm-sched', 'pause'),
      'virtualmachineinstance',
      'vm-sched',
      'VM is not running',
    ],
    [
      'pause of a paused VMI',
      'PUT',
      vmiOp('vm-paused', 'pause'),
      'virtualmachineinstance',
      'vm-paused',
      'VMI is already paused',
    ],
    [
      'unpause of a VMI not running',
      'PUT',
      vmiOp('vm-sched', 'unpause'),
      'virtualmachineinstance',
      'vm-sched',
      'VMI is not running',
    ],
    [
      'unpause of a running VMI',
      'PUT',
      vmiOp('vm-run', 'unpause'),
      'virtualmachineinstance',
      'vm-run',
      'VMI is not paused',
    ],
    [
      'softreboot of a paused VMI',
      'PUT',
      vmiOp('vm-paused', 'softreboot'),
      'virtualmachineinstance',
      'vm-paused',
      'VMI is paused',
    ],
    [
      'freeze of a VMI not running',
      'PUT',
      vmiOp('vm-sched', 'freeze'),
      'virtualmachineinstance',
      'vm-sched',
      'VM is not running',
    ],
    [
      'guestosinfo without an agent',
      'GET',
      vmiOp('vm-run', 'guestosinfo'),
      'virtualmachineinstance',
      'vm-run',
      'VMI does not have guest agent connected',
    ],
  ])('%s', async (_what, method, path, resource, name, why) => {
    expect(await h.call(method, path, method === 'PUT' ? {} : undefined)).toEqual(
      conflictOn(resource, name, why),
    );
  });

  it("a VM or VMI that does not exist: upstream's NotFound text", async () => {
    expect(await h.call('PUT', vmOp('nope', 'start'), {})).toMatchObject({
      code: 404,
      body: { reason: 'NotFound', message: 'virtualmachine.kubevirt.io "nope" not found' },
    });
    expect(await h.call('PUT', vmiOp('nope', 'pause'), {})).toMatchObject({
      code: 404,
      body: { reason: 'NotFound', message: 'virtualmachineinstance.kubevirt.io "nope" not found' },
    });
  });
});

describe("virt-api's version", () => {
  it('is semver whose major.minor is the served KubeVirt release, naming kubevirt-ts', async () => {
    const { code, body } = await h.call('GET', '/apis/subresources.kubevirt.io/v1/version');
    expect(code).toBe(200);
    const v = String(body.gitVersion);
    // upstream's virtctl: semver.NewVersion(strings.TrimPrefix(gitVersion, "v")), equal Major and Minor.
    const m =
      /^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)-kubevirt-ts\.([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)$/.exec(v);
    expect(m, v).not.toBeNull();
    expect([m?.[1], m?.[2]]).toEqual(['1', '9']);
  });
});

describe('forced stop and restart', () => {
  const grace = async (name: string) =>
    (
      (await h.store.get(VirtualMachineInstanceType, name, NS)) as {
        spec: { terminationGracePeriodSeconds?: number };
      }
    ).spec.terminationGracePeriodSeconds;

  it('stop --grace-period=0 sets the VMI grace period to 0 and halts the VM', async () => {
    expect((await h.call('PUT', `${base}/virtualmachines/vm-run/stop`, { gracePeriod: 0 })).code).toBe(200);
    expect(await grace('vm-run')).toBe(0);
    const v = (await h.store.get(VirtualMachineType, 'vm-run', NS)) as { spec: { runStrategy: string } };
    expect(v.spec.runStrategy).toBe('Halted');
  });

  it('a stopping VM takes a shorter grace period', async () => {
    expect((await h.call('PUT', `${base}/virtualmachines/vm-stopping/stop`, { gracePeriod: 0 })).code).toBe(
      200,
    );
    expect(await grace('vm-stopping')).toBe(0);
  });

  it("restart --force --grace-period=0 sets the VMI grace period to 1 s (upstream's shortest safe restart)", async () => {
    expect(
      (await h.call('PUT', `${base}/virtualmachines/vm-restart/restart`, { gracePeriodSeconds: 0 })).code,
    ).toBe(200);
    expect(await grace('vm-restart')).toBe(1);
    const v = (await h.store.get(VirtualMachineType, 'vm-restart', NS)) as {
      status: { stateChangeRequests: Array<{ action: string }> };
    };
    expect(v.status.stateChangeRequests.map((r) => r.action)).toEqual(['Stop', 'Start']);
  });
});

describe('portforward on a VM (virtctl port-forward vm/NAME, ssh user@vm/NAME)', () => {
  it("forwards to the VM's VMI", async () => {
    const ws = await h.stream(`${base}/virtualmachines/vm-pf/portforward/${echoPort}/tcp`);
    const got = new Promise<string>((resolve) => ws.once('message', (d: Buffer) => resolve(d.toString())));
    ws.send(Buffer.from('hello vm'));
    expect(await got).toBe('hello vm');
    ws.close();
  });

  it('also without the protocol segment', async () => {
    const ws = await h.stream(`${base}/virtualmachines/vm-pf/portforward/${echoPort}`);
    ws.close();
  });

  it('refuses as upstream: a VM that has not started its VMI, a VMI it does not own, a VM that does not exist', async () => {
    await expect(h.stream(`${base}/virtualmachines/vm-notstarted/portforward/22/tcp`)).rejects.toMatchObject({
      code: 409,
      message: expect.stringContaining(
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io \\"vm-notstarted\\": VMI is not started',
      ),
    });
    await expect(h.stream(`${base}/virtualmachines/vm-alien/portforward/22/tcp`)).rejects.toMatchObject({
      code: 500,
    });
    await expect(h.stream(`${base}/virtualmachines/nope/portforward/22/tcp`)).rejects.toMatchObject({
      code: 404,
      message: expect.stringContaining('virtualmachine.kubevirt.io \\"nope\\" not found'),
    });
  });

  it('refuses a paused VMI with "VMI is paused"', async () => {
    await expect(h.stream(`${base}/virtualmachines/vm-paused/portforward/22/tcp`)).rejects.toMatchObject({
      code: 409,
      message: expect.stringContaining('\\"vm-paused\\": VMI is paused'),
    });
  });
});
