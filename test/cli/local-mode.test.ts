/**
 * The CLI against local mode with a real guest: `kubevirt-ts up -d` boots a copy of
 * examples/vm-tiny.yaml; `virtctl console` in a pseudo-terminal reads the guest's boot
 * marker and types a command into its shell; pause and unpause; `up` is stopped and
 * started again with the guest running (same domain id, no second boot marker, statuses
 * converge); then stop and start. Each launcher runs its own libvirt daemons (the
 * default): the test looks at the domain through the launcher's daemon socket.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { defaultCliEntry } from '../../src/controllers/local/pod-runtime/pod-runtime';
import { findLibvirtDaemon } from '../../src/controllers/virt-launcher/libvirt-daemons';
import { available, BOOT_MARKER, guestDir, unavailableReason } from '../support/guest';
import { integration } from '../support/integration';
import { PtySession, ptyAvailable } from './pty-bridge';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The built CLI (the test command builds dist/ first); KUBEVIRT_TS_CLI_ENTRY overrides it. */
const cli = process.env.KUBEVIRT_TS_CLI_ENTRY || defaultCliEntry();
const virtctl = path.join(path.dirname(cli), 'virtctl.js');
const LIBVIRT = 'qemu:///system';
const libvirtAnswers = () => spawnSync('virsh', ['-c', LIBVIRT, 'version'], { stdio: 'ignore' }).status === 0;

/** Newest modification time under `dir`. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    t = Math.max(t, e.isDirectory() ? newest(p) : statSync(p).mtimeMs);
  }
  return t;
}
// A build older than the CLI sources would test old code: treat it as missing.
const built = existsSync(cli) && statSync(cli).mtimeMs >= newest(path.join(repoRoot, 'src', 'cli'));

const run = integration(
  'CLI against local mode',
  available() && built && libvirtAnswers() && ptyAvailable(),
  !available()
    ? unavailableReason
    : !built
      ? `the CLI build (${cli}) is missing or older than src/cli: npm run build`
      : !ptyAvailable()
        ? 'python3 with its pty module is missing'
        : 'libvirtd does not answer on qemu:///system',
);

const name = `cli-${process.pid}`;
const domain = `default_${name}`;

/** The state directory of the running test (set in beforeAll). */
let stateRoot = '';

/**
 * The libvirt URIs of the launchers' own daemons (each launcher runs one, in its pod's
 * libvirt-runtime directory, reached through the short link the launcher made).
 */
function launcherUris(): string[] {
  const pods = path.join(stateRoot, 'pods');
  if (!stateRoot || !existsSync(pods)) return [];
  const sock = findLibvirtDaemon().socket;
  return readdirSync(pods)
    .map((uid) => path.join(pods, uid, 'volumes', 'kubernetes.io~empty-dir', 'libvirt-runtime'))
    .filter((rt) => existsSync(path.join(rt, 'run', 'libvirt', sock)))
    .map((rt) => `qemu+unix:///session?socket=${shortDir(rt, 48)}/run/libvirt/${sock}`);
}

/** virsh on the launcher's daemon that has the test's domain (list: the union of all). */
function virsh(...args: string[]): string {
  const outs = launcherUris().map((uri) => spawnSync('virsh', ['-c', uri, ...args], { encoding: 'utf8' }));
  if (args[0] === 'list') return outs.map((o) => o.stdout?.trim() ?? '').join('\n');
  return outs.find((o) => o.status === 0)?.stdout?.trim() ?? '';
}

async function waitFor<T>(what: string, fn: () => T | undefined | false, timeoutMs = 120_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe.runIf(run)('kubevirt-ts up and virtctl with a real guest', () => {
  let state: string;
  let manifest: string;
  const ctl = (...args: string[]) => {
    const r = spawnSync(process.execPath, [cli, ...args, '--state-dir', state], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const vctl = (...args: string[]) => {
    const r = spawnSync(process.execPath, [virtctl, ...args, '--state-dir', state], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const getJson = (kind: string) => {
    const r = ctl('get', kind, name, '-o', 'json');
    return r.code === 0
      ? (JSON.parse(r.out) as { status?: Record<string, unknown>; metadata?: { uid?: string } })
      : undefined;
  };
  const upPid = () => Number(readFileSync(path.join(state, 'up.pid'), 'utf8'));
  const vmStatus = () => getJson('vm')?.status?.printableStatus;
  const paused = () =>
    ((getJson('vmi')?.status?.conditions ?? []) as Array<{ type: string; status: string }>).some(
      (c) => c.type === 'Paused' && c.status === 'True',
    );
  const stopUp = async () => {
    const pid = upPid();
    process.kill(pid, 'SIGTERM');
    await waitFor('up to exit', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
  };

  beforeAll(() => {
    state = mkdtempSync(path.join(tmpdir(), 'kvts-cli-'));
    stateRoot = state;
    // QEMU runs as its own account and reads the kernel from the image store.
    chmodSync(state, 0o755);
    const vm = parse(readFileSync(path.resolve(repoRoot, 'examples/vm-tiny.yaml'), 'utf8'));
    vm.metadata.name = name;
    vm.spec.template.metadata.labels['kubevirt.io/vm'] = name;
    // A data disk from a PersistentVolumeClaim, listed after the VM: the claim is bound by
    // local mode's volume binder and the pod waits for it, as with a real control plane.
    // `storageClassName: ""` asks for a class-less (hand-made) volume, as on a cluster: a
    // claim naming no class would get the default class (local mode's pool) if the binder
    // saw it before the volume, as the DefaultStorageClass admission gives it at creation.
    const pvDir = path.join(state, 'pv-data');
    mkdirSync(pvDir, { mode: 0o777 });
    chmodSync(pvDir, 0o777);
    writeFileSync(path.join(pvDir, 'disk.img'), Buffer.alloc(0), { mode: 0o666 });
    truncateSync(path.join(pvDir, 'disk.img'), 16 * 1024 * 1024);
    chmodSync(path.join(pvDir, 'disk.img'), 0o666);
    vm.spec.template.spec.domain.devices.disks = [
      { name: 'data', serial: 'pvcdata', disk: { bus: 'virtio' } },
    ];
    vm.spec.template.spec.volumes = [{ name: 'data', persistentVolumeClaim: { claimName: `${name}-data` } }];
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: `${name}-data`, namespace: 'default' },
      spec: {
        storageClassName: '',
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '16Mi' } },
      },
    };
    const volume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `${name}-pv` },
      spec: { capacity: { storage: '16Mi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: pvDir } },
    };
    manifest = path.join(state, 'vm.yaml');
    writeFileSync(manifest, [vm, claim, volume].map((d) => stringify(d)).join('---\n'));
  });

  afterAll(async () => {
    try {
      if (existsSync(path.join(state, 'up.pid'))) await stopUp();
    } catch {}
    virsh('destroy', domain);
    virsh('undefine', '--nvram', domain);
    // Launchers exit once their domain is gone; give them a moment before removing their dirs.
    await new Promise((r) => setTimeout(r, 1_000));
    // `up` is stopped, so no pod runtime tears the pods' networks down: remove the
    // namespaces the state directory records (their veths go with them) before it goes.
    const pods = path.join(state, 'pods');
    for (const uid of existsSync(pods) ? readdirSync(pods) : []) {
      const file = path.join(pods, uid, 'network.json');
      if (!existsSync(file)) continue;
      const netns = (JSON.parse(readFileSync(file, 'utf8')) as { netns: string }).netns;
      spawnSync('ip', ['netns', 'delete', path.basename(netns)], { stdio: 'ignore' });
    }
    rmSync(state, { recursive: true, force: true });
  }, 120_000);

  it('refuses a manifest whose image is not imported, naming it and the import command', () => {
    const r = ctl('up', '-d', manifest);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      'spec.template.spec.domain.firmware.kernelBoot.container.image: image "kubevirt-ts/tiny-guest" is not in the local image store',
    );
    expect(r.err).toContain('kubevirt-ts image import kubevirt-ts/tiny-guest <file-or-dir>');
  });

  it('boots the VM in the background and shows it Running in get', async () => {
    expect(ctl('image', 'import', 'kubevirt-ts/tiny-guest', guestDir).code).toBe(0);
    // --v: the components' JSON lines go to the state dir's up.log (checked below).
    const r = ctl('up', '-d', '--v', '3', manifest);
    expect(r.err).toContain(`VirtualMachine default/${name} created`);
    expect(r.code).toBe(0);
    await waitFor('VM Running', () => vmStatus() === 'Running');
    const table = ctl('get', 'vms').out;
    expect(table).toMatch(new RegExp(`^${name}\\s+\\d+s\\s+Running\\s+True$`, 'm'));
    // The claim's disk reaches the domain through the pod's mount of the bound volume.
    const source = /<source file='([^']*vmi-disks\/data\/disk\.img)'/.exec(virsh('dumpxml', domain))?.[1];
    expect(source).toMatch(/\/volumes\/kubernetes\.io~empty-dir\/private\/vmi-disks\/data\/disk\.img$/);
    expect(realpathSync(source ?? '')).toBe(path.join(realpathSync(state), 'pv-data', 'disk.img'));
  }, 180_000);

  it('serves virt-handler and virt-controller metrics and health on loopback (metrics.json)', async () => {
    const urls = JSON.parse(readFileSync(path.join(state, 'metrics.json'), 'utf8')) as Record<string, string>;
    expect(Object.keys(urls).sort()).toEqual(['virt-controller', 'virt-handler']);
    for (const u of Object.values(urls)) {
      expect(u).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await fetch(`${u}/healthz`)).status).toBe(200);
      expect((await fetch(`${u}/readyz`)).status).toBe(200);
    }
    const vcpu = await waitFor('the VMI vcpu series', async () => {
      const text = await (await fetch(`${urls['virt-handler']}/metrics`)).text();
      return new RegExp(
        `^kubevirt_vmi_vcpu_seconds_total\\{[^}]*name="${name}"[^}]*\\} ([\\d.e+-]+)$`,
        'm',
      ).exec(text)?.[1];
    });
    expect(Number(vcpu)).toBeGreaterThan(0);
    const ctrl = await (await fetch(`${urls['virt-controller']}/metrics`)).text();
    const info = ctrl
      .split('\n')
      .find((l) => l.startsWith('kubevirt_vmi_info{') && l.includes(`,name="${name}"`));
    expect(info).toContain('phase="running"');
  }, 60_000);

  it('up --v: the components write JSON lines, the VMI ones with its namespace, name and uid', () => {
    const uid = getJson('vmi')?.metadata?.uid;
    const lines = readFileSync(path.join(state, 'up.log'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const components = new Set(lines.map((l) => l.component));
    for (const c of ['virt-handler', 'pod runtime']) expect(components).toContain(c);
    expect(lines.find((l) => l.component === 'virt-handler' && l.reason === 'Started')).toMatchObject({
      level: 'info',
      kind: 'VirtualMachineInstance',
      namespace: 'default',
      name,
      uid,
      msg: 'VirtualMachineInstance started.',
    });
  });

  it('console: reads the boot marker and runs a command in the guest shell; Ctrl-] leaves', async () => {
    const pty = new PtySession([process.execPath, virtctl, 'console', name, '--state-dir', state]);
    await pty.waitFor('The escape sequence is ^]');
    await pty.waitFor(BOOT_MARKER, 120_000);
    const from = pty.output.length;
    pty.type('\r');
    pty.type('echo $((6*7))X\r');
    await pty.waitFor('42X', 60_000, from);
    pty.type('\x1d');
    expect(await pty.exited).toBe(0);
  }, 180_000);

  it('pause and unpause the VM', async () => {
    expect(vctl('pause', 'vm', name).out).toBe(`VM ${name} was scheduled to pause\n`);
    await waitFor('the Paused condition', () => paused());
    expect(virsh('domstate', domain)).toBe('paused');
    expect(vctl('unpause', 'vm', name).code).toBe(0);
    await waitFor('the Paused condition gone', () => !paused());
    expect(virsh('domstate', domain)).toBe('running');
  }, 120_000);

  it('restart of up: the guest keeps running (same domain, one boot marker) and statuses converge', async () => {
    const domId = virsh('domid', domain);
    const vmiUid = getJson('vmi')?.metadata?.uid;
    await stopUp();
    expect(virsh('domstate', domain)).toBe('running');
    expect(ctl('up', '-d').code).toBe(0);
    await waitFor('VM Running', () => vmStatus() === 'Running');
    expect(getJson('vmi')?.metadata?.uid).toBe(vmiUid);
    expect(virsh('domid', domain)).toBe(domId);
    const pty = new PtySession([process.execPath, virtctl, 'console', name, '--state-dir', state]);
    await pty.waitFor('The escape sequence is ^]');
    const from = pty.output.length;
    pty.type('\r');
    pty.type('echo $((7*6))Y\r');
    await pty.waitFor('42Y', 60_000, from);
    // The console replays the session: one boot, and the command typed before the restart.
    expect(pty.output.split(BOOT_MARKER).length).toBe(2);
    expect(pty.output).toContain('42X');
    pty.type('\x1d');
    expect(await pty.exited).toBe(0);
  }, 180_000);

  it('stop --force --grace-period 0 ends the guest; start boots it again', async () => {
    expect(vctl('stop', name, '--force', '--grace-period', '0').out).toBe(
      `VM ${name} was scheduled to stop\n`,
    );
    await waitFor('VM Stopped', () => vmStatus() === 'Stopped');
    await waitFor('the domain gone', () => !virsh('list', '--all', '--name').split('\n').includes(domain));
    expect(vctl('stop', name).err).toContain(`virtualmachine.kubevirt.io "${name}": VM is not running`);
    expect(vctl('start', name).code).toBe(0);
    await waitFor('VM Running', () => vmStatus() === 'Running');
    expect(virsh('domstate', domain)).toBe('running');
  }, 180_000);
});
