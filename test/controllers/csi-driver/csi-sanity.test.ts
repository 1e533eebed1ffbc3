/**
 * csi-sanity (github.com/kubernetes-csi/csi-test/v5, built by scripts/csi/build-csi-sanity.sh)
 * against the CSI driver's socket on a real reflink XFS pool, once with filesystem
 * volumes and once with block volumes. Every spec must pass or be skipped; the skipped
 * ones are exactly the expected list below (each with why), read from csi-sanity's JUnit
 * report, so a newly skipped spec fails the test.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CsiDriver, startCsiDriver } from '../../../src/controllers/csi-driver/csi-driver';
import { cacheDir, integration } from '../../support/integration';
import { makeTestPool, poolTestsEnabled, type TestPool } from './pool-fixture';

const sanity = join(cacheDir, 'csi-sanity', 'current', 'bin', 'csi-sanity');
const enabled =
  poolTestsEnabled('csi-sanity') &&
  integration(
    'csi-sanity',
    existsSync(sanity),
    `${sanity} is missing: run scripts/setup-host.sh --with-kube`,
  );

/**
 * The specs csi-sanity skips against this driver, and why (substring of the spec's full
 * name -> the reason). Everything else runs and passes.
 */
const EXPECTED_SKIPS: Record<string, string> = {
  // A pool volume is on its node already: there is no attach step (no PUBLISH_UNPUBLISH_VOLUME),
  // and csi-sanity's controller-side lifecycle specs need one.
  'ControllerPublishVolume should': 'no controller publish (no attach step)',
  'ControllerUnpublishVolume should': 'no controller publish (no attach step)',
  '[Controller Server] volume lifecycle should': 'needs controller publish',
  // VolumeAttributesClass (mutable parameters) is not supported (no MODIFY_VOLUME).
  'ModifyVolume [Controller Server]': 'no MODIFY_VOLUME',
  'volume attribute class': 'no MODIFY_VOLUME',
  // The health RPCs and snapshot topology are alpha additions of spec v1.13+; the driver
  // speaks v1.12 and reports volume condition through VOLUME_CONDITION instead, which
  // the kubelet reads (csi.proto's header says why).
  ControllerGetVolumeHealth: 'spec v1.13+ RPC',
  ControllerListVolumeHealth: 'spec v1.13+ RPC',
  NodeGetVolumeHealth: 'spec v1.13+ RPC',
  NodeGetStorageHealth: 'spec v1.13+ RPC',
  'creating a snapshot with accessibility requirements': 'SNAPSHOT_ACCESSIBILITY_CONSTRAINTS is spec v1.13+',
  // No volume group snapshots (the GroupController service is not served).
  'GroupController Service': 'no GroupController service',
  // Marked pending in csi-sanity itself (PIt): it never runs.
  'ListVolumes pagination should detect volumes added between pages': 'pending upstream',
};

interface Spec {
  name: string;
  skipped: boolean;
  failed: boolean;
  message: string;
}

function parseJunit(xml: string): Spec[] {
  const specs: Spec[] = [];
  for (const m of xml.matchAll(/<testcase name="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const body = m[3] ?? '';
    const skip = /<skipped message="([^"]*)"/.exec(body);
    specs.push({
      name: m[1].replace(/&#34;/g, '"').replace(/&amp;/g, '&').replace(/&#39;/g, "'"),
      skipped: !!skip,
      failed: /<failure|<error/.test(body),
      message: skip?.[1] ?? '',
    });
  }
  return specs;
}

function runSanity(args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(sanity, args, { maxBuffer: 64 << 20, timeout: 240_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${stdout}\n${stderr}` }),
    );
  });
}

describe.runIf(enabled)('csi-sanity against the CSI driver (root, reflink XFS pool)', () => {
  let tp: TestPool;
  let driver: CsiDriver;
  let socket: string;
  beforeAll(async () => {
    tp = await makeTestPool(4 * 1024 ** 3);
    socket = join(tp.base, 'csi.sock');
    driver = await startCsiDriver({
      socketPath: socket,
      poolDir: tp.dir,
      poolImage: tp.image,
      poolSizeBytes: 4 * 1024 ** 3,
      nodeId: 'sanity-node',
      version: 'test',
      log: (m) => console.log(m),
    });
  });
  afterAll(async () => {
    await tp?.cleanup(async () => {
      await driver?.stop();
    });
  });

  for (const accessType of ['mount', 'block'] as const) {
    it(`passes csi-sanity with ${accessType} volumes`, { timeout: 300_000 }, async () => {
      const dir = join(tp.base, accessType);
      await mkdir(dir, { recursive: true });
      const junit = join(dir, 'junit.xml');
      const t0 = performance.now();
      const { code, out } = await runSanity([
        `--csi.endpoint=unix://${socket}`,
        `--csi.mountdir=${join(dir, 'target')}`,
        `--csi.stagingdir=${join(dir, 'staging')}`,
        `--csi.testvolumeaccesstype=${accessType}`,
        // Small volumes: the pool is thin, but each mkfs writes metadata.
        '--csi.testvolumesize=67108864',
        '--csi.testvolumeexpandsize=134217728',
        `--ginkgo.junit-report=${junit}`,
      ]);
      const specs = parseJunit(await readFile(junit, 'utf8').catch(() => ''));
      const passed = specs.filter((s) => !s.skipped && !s.failed);
      const failed = specs.filter((s) => s.failed);
      const skipped = specs.filter((s) => s.skipped);
      console.log(
        `csi-sanity ${accessType}: ${passed.length} passed, ${failed.length} failed, ${skipped.length} skipped in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
      for (const s of skipped) console.log(`  skipped: ${s.name} (${s.message})`);
      if (process.env.CSI_SANITY_VERBOSE) for (const s of passed) console.log(`  passed: ${s.name}`);
      if (code !== 0 || failed.length) console.log(out.slice(-20000));
      expect(failed.map((s) => s.name)).toEqual([]);
      expect(code).toBe(0);
      expect(passed.length).toBeGreaterThan(50);
      const unexplained = skipped.filter((s) => !Object.keys(EXPECTED_SKIPS).some((k) => s.name.includes(k)));
      expect(unexplained.map((s) => `${s.name}: ${s.message}`)).toEqual([]);
    });
  }
});
