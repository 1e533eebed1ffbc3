import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { validateFiles } from '../../src/cli/commands/validate';
import { buildProgram } from '../../src/cli/program';
import { fixtureFiles, fixturesDir } from '../support/fixtures';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const built = path.join(repoRoot, 'dist/cli/kubevirt-ts.js');

/** Newest modification time of the sources, to tell whether the built CLI is current. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}

// The test command builds dist/ first, so the built CLI is what gets spawned there; a dev
// run with stale or no build falls back to the sources through tsx.
const cliArgs =
  existsSync(built) && statSync(built).mtimeMs >= newestSource(path.join(repoRoot, 'src'))
    ? [built]
    : ['--import', 'tsx', path.join(repoRoot, 'src/cli/kubevirt-ts.ts')];

/** Runs the CLI in a child process, as a user would. */
function run(...args: string[]) {
  const r = spawnSync(process.execPath, [...cliArgs, 'validate', ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const ex = (f: string) => path.join(fixturesDir, f);
const tmp = mkdtempSync(path.join(tmpdir(), 'kubevirt-ts-validate-'));
function tmpFile(name: string, text: string): string {
  const p = path.join(tmp, name);
  writeFileSync(p, text);
  return p;
}

/** Fixtures that use fields validation refuses (docs/unsupported-fields.md). */
const REFUSED_FIXTURES = ['vmi-gpu-dra.yaml'];

// Spawning is cheap in CPU but slow in wall time on a loaded host; allow for that.
describe('kubevirt-ts validate (spawned)', { timeout: 180_000 }, () => {
  it('prints every fixture defaulted and exits 0 with the gates they need', () => {
    const accepted = fixtureFiles().filter((f) => !REFUSED_FIXTURES.includes(f));
    const r = run('--feature-gates', 'HostDisk,HostDevices,Sidecar,GPUsWithDRA', ...accepted.map(ex));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const docs = parseAllDocuments(r.stdout).map((d) => d.toJS());
    // 43 KubeVirt objects and 2 Kubernetes built-ins, in 44 files.
    expect(docs).toHaveLength(45);
    const vmi = docs.find(
      (d) => d.kind === 'VirtualMachineInstance' && d.metadata.name === 'vmi-containerdisk',
    );
    expect(vmi.spec.domain.machine).toEqual({ type: 'q35' });
    expect(vmi.spec.domain.cpu.model).toBe('host-model');
    expect(vmi.metadata.finalizers).toEqual(['kubevirt.io/foregroundDeleteVirtualMachine']);
    const pc = docs.find((d) => d.kind === 'PriorityClass' && d.metadata.name === 'fixture-low-priority');
    expect(pc.value).toBe(1000);
  });

  it('refuses the fixtures using fields kubevirt-ts does not implement, with the reasons', () => {
    const r = run('--feature-gates', 'GPUsWithDRA', ...REFUSED_FIXTURES.map(ex));
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual([
      ...[
        'spec.resourceClaims',
        'spec.domain.devices.gpus[0].claimName',
        'spec.domain.devices.gpus[0].requestName',
      ].map(
        (p) =>
          `VirtualMachineInstance/vmi-gpu-dra: ${p}: ${p} is not supported by kubevirt-ts: dynamic resource allocation (DRA) is not implemented: the launcher pod gets no resource claims`,
      ),
    ]);
  });

  it('prints one error line per problem and exits 1 without the gates', () => {
    const r = run(ex('vmi-hostdisk.yaml'), ex('vmi-hostdevice.yaml'));
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toEqual([
      'VirtualMachineInstance/vmi-hostdisk: spec.volumes[0]: HostDisk feature gate is not enabled',
      'VirtualMachineInstance/vmi-hostdevice: spec.HostDevices: Host Devices feature gate is not enabled in kubevirt-config',
    ]);
  });

  it('reports malformed YAML with the file and position, never a stack trace', () => {
    const bad = tmpFile(
      'bad.yaml',
      'apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: x\n',
    );
    const r = run(bad);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: document 1: YAML syntax error`),
    );
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('escapes hostile names so they cannot forge output lines', () => {
    const evil = tmpFile(
      'evil.yaml',
      'apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: "x\\nVirtualMachineInstance/forged: ok"\nspec:\n  domain:\n    devices: {}\n    memory: {guest: 64Mi}\n',
    );
    const r = run(evil);
    expect(r.status).toBe(1);
    const lines = r.stderr.trim().split('\n');
    expect(
      lines.every((l) => l.startsWith('VirtualMachineInstance/x\\u000aVirtualMachineInstance/forged: ok: ')),
    ).toBe(true);
    expect(lines[0]).toContain('metadata.name: Invalid value: "x\\nVirtualMachineInstance/forged: ok"');
  });
});

describe('validateFiles (in process)', () => {
  it('reads feature gates from a KubeVirt CR given with --config', async () => {
    const cr = tmpFile(
      'kubevirt-cr.yaml',
      'apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata:\n  name: kubevirt\n  namespace: kubevirt\nspec:\n  configuration:\n    developerConfiguration:\n      featureGates: [HostDisk]\n',
    );
    const r = await validateFiles([ex('vmi-hostdisk.yaml')], { config: cr });
    expect(r.errors).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.output).toContain('name: vmi-hostdisk');
  });

  it('reports a missing file clearly', async () => {
    const r = await validateFiles([path.join(tmp, 'nope.yaml')]);
    expect(r.ok).toBe(false);
    expect(r.errors).toEqual([`${path.join(tmp, 'nope.yaml')}: cannot read: no such file`]);
  });

  it('the command requires at least one file', async () => {
    const program = buildProgram()
      .exitOverride()
      .configureOutput({ writeErr: () => {}, writeOut: () => {} });
    program.commands.forEach((c) => {
      c.exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
    });
    await expect(program.parseAsync(['node', 'kubevirt-ts', 'validate'])).rejects.toThrow(
      "missing required argument 'file'",
    );
  });

  it('warns about unknown feature gates', async () => {
    const r = await validateFiles([ex('vmi-containerdisk.yaml')], { featureGates: 'HostDisk,NoSuchGate' });
    expect(r.ok).toBe(true);
    expect(r.warnings).toEqual(['warning: unknown feature gate NoSuchGate']);
  });

  it('rejects a --config file without a KubeVirt object', async () => {
    const r = await validateFiles([ex('vmi-containerdisk.yaml')], { config: ex('vmi-containerdisk.yaml') });
    expect(r.ok).toBe(false);
    expect(r.errors).toEqual([
      `${ex('vmi-containerdisk.yaml')}: --config needs exactly one KubeVirt object, found 0`,
    ]);
  });

  it('--expand applies instance types from the inputs and reports upstream conflicts', async () => {
    const r = await validateFiles([ex('instancetype-large.yaml'), ex('vm-large.yaml')], { expand: true });
    expect(r.ok).toBe(false);
    expect(r.errors).toEqual([
      'VirtualMachine/vm-large: spec.template.spec.domain.memory: VM field spec.template.spec.domain.memory conflicts with selected instance type',
    ]);
  });

  it('reports an unknown kind from the loader', async () => {
    const f = tmpFile(
      'unknown.yaml',
      'apiVersion: kubevirt.io/v1\nkind: VirtualMachineThing\nmetadata:\n  name: x\n',
    );
    const r = await validateFiles([f]);
    expect(r.ok).toBe(false);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toContain('unknown.yaml');
    expect(r.errors[0]).toContain('VirtualMachineThing');
  });

  it('applies --config settings to defaulting (masquerade default interface)', async () => {
    const cr = tmpFile(
      'kv-masq.yaml',
      'apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata:\n  name: kubevirt\nspec:\n  configuration:\n    network:\n      defaultNetworkInterface: masquerade\n',
    );
    const r = await validateFiles([ex('vmi-containerdisk.yaml')], { config: cr });
    expect(r.ok).toBe(true);
    const doc = parseAllDocuments(r.output)[0].toJS();
    expect(doc.spec.domain.devices.interfaces).toEqual([{ name: 'default', masquerade: {} }]);
  });
});

describe('validateFiles --config checks', () => {
  it('rejects an invalid KubeVirt configuration with its field path', async () => {
    const cr = tmpFile(
      'kv-bad.yaml',
      'apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata:\n  name: kubevirt\nspec:\n  configuration:\n    developerConfiguration:\n      memoryOvercommit: 0\n',
    );
    const r = await validateFiles([ex('vmi-containerdisk.yaml')], { config: cr });
    expect(r.ok).toBe(false);
    expect(r.errors).toEqual([
      `${cr}: KubeVirt/kubevirt: spec.configuration.developerConfiguration.memoryOvercommit: Invalid value: 0: must be greater than 0`,
    ]);
  });

  it('warns about unknown feature gates listed in the KubeVirt CR', async () => {
    const cr = tmpFile(
      'kv-gates.yaml',
      'apiVersion: kubevirt.io/v1\nkind: KubeVirt\nmetadata:\n  name: kubevirt\nspec:\n  configuration:\n    developerConfiguration:\n      featureGates: [HostDisk, Hostdisk]\n',
    );
    const r = await validateFiles([ex('vmi-hostdisk.yaml')], { config: cr });
    expect(r.ok).toBe(true);
    expect(r.warnings).toEqual([`warning: ${cr}: unknown feature gate Hostdisk`]);
  });
});
