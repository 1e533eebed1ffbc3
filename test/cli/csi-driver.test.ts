/**
 * `kubevirt-ts csi-driver`: bad flags are errors naming the flag; as a process (root) it
 * makes and mounts its pool from --pool-image, serves the CSI services on --endpoint
 * (GetPluginInfo answers csi.kubevirt-ts.io, CreateVolume makes a volume in the pool) and
 * stops with status 0 on SIGTERM, leaving the pool mounted (volumes in use stay usable).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { checkCsiDriverFlags } from '../../src/cli/commands/csi-driver';
import { unmountPoolFilesystem } from '../../src/controllers/csi-driver/pool-filesystem';
import { csiClients } from '../controllers/csi-driver/csi-client';
import { assertNothingLeft, poolTestsEnabled } from '../controllers/csi-driver/pool-fixture';
import { waitFor } from '../support/wait';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const entry = path.join(repoRoot, 'src', 'cli', 'kubevirt-ts.ts');

const good = {
  endpoint: 'unix:///csi/csi.sock',
  nodeId: 'n1',
  poolDir: '/var/lib/kubevirt-ts/csi/pool',
  poolImage: '/var/lib/kubevirt-ts/csi/pool.img',
  poolSize: '50Gi',
};

describe('kubevirt-ts csi-driver flags', () => {
  it('accepts the defaults and names the flag of each bad value', () => {
    expect(checkCsiDriverFlags(good)).toEqual({ socketPath: '/csi/csi.sock', poolSizeBytes: 50 * 1024 ** 3 });
    expect(() => checkCsiDriverFlags({ ...good, endpoint: 'tcp://1.2.3.4:5' })).toThrow(/^--endpoint: /);
    expect(() => checkCsiDriverFlags({ ...good, poolDir: 'pool' })).toThrow(/^--pool-dir: /);
    expect(() => checkCsiDriverFlags({ ...good, poolImage: '/a/../b.img' })).toThrow(/^--pool-image: /);
    expect(() => checkCsiDriverFlags({ ...good, poolSize: 'lots' })).toThrow(/^--pool-size: /);
    expect(() => checkCsiDriverFlags({ ...good, poolSize: '1Mi' })).toThrow(/^--pool-size: .*from 512Mi/);
  });
});

describe.runIf(poolTestsEnabled('kubevirt-ts csi-driver process'))(
  'kubevirt-ts csi-driver process (root)',
  () => {
    let base = '';
    let child: ChildProcess | undefined;
    const log: string[] = [];
    afterAll(async () => {
      child?.kill('SIGKILL');
      if (!base) return;
      await unmountPoolFilesystem(path.join(base, 'pool'));
      await assertNothingLeft(base);
      await rm(base, { recursive: true, force: true });
    });

    it('serves the CSI services from a pool it makes, and stops on SIGTERM', async () => {
      base = await mkdtemp(path.join(tmpdir(), 'kvts-csi-cli-'));
      const socket = path.join(base, 'csi.sock');
      child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          entry,
          'csi-driver',
          `--endpoint=unix://${socket}`,
          '--node-id=cli-node',
          `--pool-dir=${path.join(base, 'pool')}`,
          `--pool-image=${path.join(base, 'pool.img')}`,
          '--pool-size=1Gi',
          `--registration-dir=${path.join(base, 'registry')}`,
          '--kubelet-registration-path=/var/lib/kubelet/plugins/csi.kubevirt-ts.io/csi.sock',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child.stderr?.on('data', (d) => log.push(String(d)));
      child.stdout?.on('data', (d) => log.push(String(d)));
      await waitFor(`the driver's socket (output: ${log.join('')})`, () => existsSync(socket), 30_000, 100);
      // --registration-dir: the kubelet's plugin-registration socket (the install passes it).
      const reg = path.join(base, 'registry', 'csi.kubevirt-ts.io-reg.sock');
      await waitFor('the registration socket', () => existsSync(reg), 10_000, 100);
      const csi = csiClients(socket);
      try {
        expect((await csi.identity.getPluginInfo({})).name).toBe('csi.kubevirt-ts.io');
        expect((await csi.node.nodeGetInfo({})).nodeId).toBe('cli-node');
        const vol = await csi.controller.createVolume({
          name: 'cli-vol',
          capacityRange: { requiredBytes: 1024 * 1024, limitBytes: 0 },
          volumeCapabilities: [{ block: {}, accessMode: { mode: 1 } }],
          parameters: {},
          secrets: {},
          mutableParameters: {},
        });
        expect((await stat(path.join(base, 'pool', 'volumes', vol.volume!.volumeId, 'disk'))).size).toBe(
          1024 * 1024,
        );
      } finally {
        csi.close();
      }
      const exited = new Promise<number | null>((r) => child?.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      child = undefined;
      expect(existsSync(reg)).toBe(false);
      expect(log.join('')).toContain('serving CSI on');
    });
  },
);
