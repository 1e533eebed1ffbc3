/**
 * The CSI driver's block volumes and its access rules end to end over its socket on a real
 * reflink pool: a block volume reaches the target as the loop device, read-only when asked
 * (writes fail), and grows online; RWOP refuses a second writer; multi-node modes need a
 * shared pool, and filesystem ones never write from two nodes; hostile IDs and paths are
 * refused or absent and touch nothing; capacity is the pool's real free space.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, open, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { VolumeCapability_AccessMode_Mode as Mode } from '../../../src/controllers/csi-driver/generated/csi/csi';
import { blockCap, MiB, mountCap, useTestDriver } from './driver-fixture';
import { poolTestsEnabled } from './pool-fixture';

const enabled = poolTestsEnabled('CSI node service, block volumes and access');

function blockSize(dev: string): number {
  return Number(execFileSync('blockdev', ['--getsize64', dev], { encoding: 'utf8' }).trim());
}

describe.runIf(enabled)('CSI driver, block volumes and access rules (root, reflink XFS pool)', () => {
  const t = useTestDriver();
  const { create, stage, publish, unpublish, unstage, base } = t;
  const csi = {
    get controller() {
      return t.csi.controller;
    },
    get node() {
      return t.csi.node;
    },
  };
  const tp = {
    get dir() {
      return t.pool.dir;
    },
  };

  it('publishes a block volume as its loop device, read-only when asked, and grows it online', async () => {
    const vol = await create('blk-vol', 32 * MiB, blockCap());
    const staging = join(base(), 'blk', 'staging');
    const target = join(base(), 'blk', 'dev');
    const roTarget = join(base(), 'blk', 'dev-ro');
    await mkdir(staging, { recursive: true });
    await stage(vol.volumeId, staging, blockCap());
    await publish(vol.volumeId, staging, target, blockCap());
    await publish(vol.volumeId, staging, roTarget, blockCap(), true);
    expect((await stat(target)).isBlockDevice()).toBe(true);
    expect(blockSize(target)).toBe(32 * MiB);
    const fh = await open(target, 'r+');
    await fh.write(Buffer.from('KVTS-BLOCK'), 0, 10, 0);
    await fh.sync();
    await fh.close();
    const ro = await open(roTarget, 'r');
    const buf = Buffer.alloc(10);
    await ro.read(buf, 0, 10, 0);
    await ro.close();
    expect(buf.toString()).toBe('KVTS-BLOCK');
    // The read-only publication is a read-only loop device: a write fails (at open or at write).
    const roWrite = async () => {
      const w = await open(roTarget, 'r+');
      try {
        await w.write(Buffer.from('X'), 0, 1, 0);
        await w.sync();
      } finally {
        await w.close();
      }
    };
    await expect(roWrite()).rejects.toThrow(/EROFS|EACCES|EPERM|EIO/);

    const grown = await csi.controller.controllerExpandVolume({
      volumeId: vol.volumeId,
      capacityRange: { requiredBytes: 96 * MiB, limitBytes: 0 },
      secrets: {},
      volumeCapability: blockCap(),
    });
    expect(grown).toEqual({ capacityBytes: 96 * MiB, nodeExpansionRequired: true });
    await csi.node.nodeExpandVolume({
      volumeId: vol.volumeId,
      volumePath: target,
      stagingTargetPath: staging,
      capacityRange: { requiredBytes: 96 * MiB, limitBytes: 0 },
      volumeCapability: blockCap(),
      secrets: {},
    });
    // Online: the published device has the new size, its data intact.
    expect(blockSize(target)).toBe(96 * MiB);
    await unpublish(vol.volumeId, roTarget);
    await unpublish(vol.volumeId, target);
    await unstage(vol.volumeId, staging);
    await csi.controller.deleteVolume({ volumeId: vol.volumeId, secrets: {} });
  });

  it('refuses a second writer of a SINGLE_NODE_SINGLE_WRITER (RWOP) volume, and multi-node modes on an unshared pool', async () => {
    const rwop = mountCap(Mode.SINGLE_NODE_SINGLE_WRITER);
    const vol = await create('rwop-vol', 16 * MiB, rwop);
    const staging = join(base(), 'rwop', 'staging');
    await mkdir(staging, { recursive: true });
    await stage(vol.volumeId, staging, rwop);
    await publish(vol.volumeId, staging, join(base(), 'rwop', 't1'), rwop);
    await expect(publish(vol.volumeId, staging, join(base(), 'rwop', 't2'), rwop)).rejects.toMatchObject({
      code: status.FAILED_PRECONDITION,
    });
    await unpublish(vol.volumeId, join(base(), 'rwop', 't1'));
    await unstage(vol.volumeId, staging);
    await csi.controller.deleteVolume({ volumeId: vol.volumeId, secrets: {} });

    await expect(create('rwx-vol', 16 * MiB, blockCap(Mode.MULTI_NODE_MULTI_WRITER))).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringMatching(/needs a pool shared by every node/),
    });
    // With the StorageClass parameter: block RWX is accepted, filesystem RWX is not.
    const shared = { parameters: { shared: 'true' }, secrets: {}, mutableParameters: {} };
    const rwx = await csi.controller.createVolume({
      name: 'rwx-vol',
      capacityRange: { requiredBytes: 16 * MiB, limitBytes: 0 },
      volumeCapabilities: [blockCap(Mode.MULTI_NODE_MULTI_WRITER)],
      ...shared,
    });
    expect(rwx.volume?.accessibleTopology).toEqual([]);
    await expect(
      csi.controller.createVolume({
        name: 'rwx-fs',
        capacityRange: { requiredBytes: 16 * MiB, limitBytes: 0 },
        volumeCapabilities: [mountCap(Mode.MULTI_NODE_MULTI_WRITER)],
        ...shared,
      }),
    ).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringMatching(/use a block volume/),
    });
    await expect(
      csi.controller.createVolume({
        name: 'bad-param',
        capacityRange: { requiredBytes: 16 * MiB, limitBytes: 0 },
        volumeCapabilities: [blockCap()],
        parameters: { sharde: 'true' },
        secrets: {},
        mutableParameters: {},
      }),
    ).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
      details: expect.stringMatching(/^parameters\.sharde: unknown parameter/),
    });
    await csi.controller.deleteVolume({ volumeId: rwx.volume!.volumeId, secrets: {} });
  });

  it('refuses hostile IDs and paths, touching nothing', async () => {
    const vol = await create('victim', 16 * MiB, mountCap());
    const canary = join(base(), 'canary');
    await writeFile(canary, 'keep');
    for (const volumeId of [
      '../volumes',
      '../../',
      'v-../../../etc',
      `${vol.volumeId}/../x`,
      'x'.repeat(200),
    ]) {
      const err = await csi.controller.deleteVolume({ volumeId, secrets: {} }).then(
        () => undefined,
        (e: { code: number }) => e.code,
      );
      // Absent (delete is idempotent) or refused as too long: never a path.
      expect([undefined, status.INVALID_ARGUMENT]).toContain(err);
      await expect(
        csi.controller.createSnapshot({ name: 's', sourceVolumeId: volumeId, secrets: {}, parameters: {} }),
      ).rejects.toMatchObject({ code: expect.any(Number) });
      await expect(stage(volumeId, join(base(), 'h'), mountCap())).rejects.toMatchObject({
        code: volumeId.length > 128 ? status.INVALID_ARGUMENT : status.NOT_FOUND,
      });
    }
    for (const [path, why] of [
      ['relative/path', /not an absolute path/],
      [`${base()}/a/../../etc`, /not a normalised path/],
      [`${tp.dir}/volumes/${vol.volumeId}`, /inside the storage pool/],
      [`${base()}/bad\nname`, /control characters/],
    ] as const) {
      await expect(stage(vol.volumeId, path, mountCap())).rejects.toMatchObject({
        code: status.INVALID_ARGUMENT,
        details: expect.stringMatching(why),
      });
      await expect(publish(vol.volumeId, join(base(), 's'), path, mountCap())).rejects.toMatchObject({
        code: status.INVALID_ARGUMENT,
      });
    }
    await expect(create('x'.repeat(129), MiB, mountCap())).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
    });
    expect(await readFile(canary, 'utf8')).toBe('keep');
    expect(
      (await csi.controller.listVolumes({ maxEntries: 0, startingToken: '' })).entries.map(
        (e) => e.volume?.volumeId,
      ),
    ).toEqual([vol.volumeId]);
    await csi.controller.deleteVolume({ volumeId: vol.volumeId, secrets: {} });
  });

  it("reports the pool's real free space as capacity, and none for another node", async () => {
    const cap = await csi.controller.getCapacity({ volumeCapabilities: [mountCap()], parameters: {} });
    const df = Number(
      execFileSync('df', ['--output=avail', '-B1', tp.dir], { encoding: 'utf8' }).trim().split('\n')[1],
    );
    expect(Math.abs(cap.availableCapacity - df)).toBeLessThan(MiB);
    const other = await csi.controller.getCapacity({
      volumeCapabilities: [mountCap()],
      parameters: {},
      accessibleTopology: { segments: { 'topology.kubevirt-ts.io/node': 'node-b' } },
    });
    expect(other.availableCapacity).toBe(0);
  });
});
