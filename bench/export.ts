/**
 * `npm run bench:export`: the VirtualMachineExport server (virt-exportserver) against bare
 * reads of the same file, in one run, on a temporary loop-mounted reflink XFS pool made by
 * the CSI driver's pool code (needs root, losetup and mkfs.xfs). No cluster: the server on
 * loopback with a TLS pair from a test CA, as the export pod runs it; the cluster path
 * (the API server's port-forward) is measured by test/cluster/vm-export.test.ts.
 *
 * A 512 MiB `disk.img` on the pool's XFS (256 MiB random, the rest sparse, like a disk with
 * free space), page cache warm for every reader (each reads it once first); best of three
 * rounds, alternating:
 * - `export_raw_mib_s`: GET `disk.img` with the token over TLS, the body counted;
 * - `export_gzip_mib_s`: GET `disk.img.gz` (MiB of the image per second);
 * - `reference_cat_mib_s`: `cat disk.img > /dev/null`;
 * - `reference_gzip1_mib_s`: `gzip -1 -c disk.img > /dev/null` (the same compression level).
 *
 * Ends with `BENCH export export_raw_mib_s= export_gzip_mib_s= reference_cat_mib_s=
 * reference_gzip1_mib_s=`.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { volumeUris } from '../src/controllers/common/export-paths';
import { startExportServer } from '../src/controllers/virt-exportserver/server';
import { createCA, createLeaf } from '../src/controllers/virt-operator/certificates';
import { makeTestPool, type TestPool } from '../test/controllers/csi-driver/pool-fixture';

const MiB = 1024 ** 2;
const SIZE_MIB = 512;
const ROUNDS = 3;
const TOKEN = 'bench-token-0123456789';

function timedMs(f: () => void): number {
  const t = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/** GETs `path` and counts the body; resolves with the milliseconds and bytes. */
function fetchMs(port: number, ca: string, path: string): Promise<{ ms: number; bytes: number }> {
  const t = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        ca,
        servername: 'virt-export-bench.ns.svc',
        agent: false,
        headers: { 'x-kubevirt-export-token': TOKEN },
      },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`GET ${path}: ${res.statusCode}`));
        let bytes = 0;
        res.on('data', (c: Buffer) => {
          bytes += c.length;
        });
        res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - t) / 1e6, bytes }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function main(): Promise<void> {
  let pool: TestPool | undefined;
  let stop: (() => Promise<void>) | undefined;
  try {
    pool = await makeTestPool(2 * 1024 ** 3);
    // The server serves `<mount>/disk.img`: a directory of the pool stands in for the mount.
    const volDir = join(pool.dir, 'bench-mount');
    execFileSync('mkdir', ['-p', volDir]);
    const disk = join(volDir, 'disk.img');
    execFileSync('dd', ['if=/dev/urandom', `of=${disk}`, 'bs=4M', `count=${SIZE_MIB / 8}`, 'status=none']);
    execFileSync('truncate', ['-s', `${SIZE_MIB}M`, disk]);
    const caPair = await createCA('bench-ca', new Date(), 3_600_000);
    const leaf = await createLeaf(
      caPair,
      { commonName: 'virt-export-bench.ns.svc', dnsNames: ['virt-export-bench.ns.svc'], usage: 'server' },
      new Date(),
      3_600_000,
    );
    const files = {
      cert: join(pool.base, 'tls.crt'),
      key: join(pool.base, 'tls.key'),
      token: join(pool.base, 'token'),
    };
    writeFileSync(files.cert, leaf.cert);
    writeFileSync(files.key, leaf.key);
    writeFileSync(files.token, TOKEN);
    const server = await startExportServer({
      paths: { volumes: [{ path: volDir, ...volumeUris('disk', true) }] },
      certFile: files.cert,
      keyFile: files.key,
      tokenFile: files.token,
      port: 0,
      host: '127.0.0.1',
      log: () => {},
    });
    stop = server.close;
    const sh = (cmd: string) => () => execFileSync('sh', ['-c', cmd], { stdio: 'ignore' });
    sh(`cat ${disk} > /dev/null`)();
    const raw: number[] = [];
    const gz: number[] = [];
    const cat: number[] = [];
    const gzip1: number[] = [];
    let wire = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const a = await fetchMs(server.port, caPair.cert, '/volumes/disk/disk.img');
      if (a.bytes !== SIZE_MIB * MiB) throw new Error(`raw GET returned ${a.bytes} bytes`);
      raw.push(a.ms);
      const b = await fetchMs(server.port, caPair.cert, '/volumes/disk/disk.img.gz');
      gz.push(b.ms);
      wire = b.bytes;
      cat.push(timedMs(sh(`cat ${disk} > /dev/null`)));
      gzip1.push(timedMs(sh(`gzip -1 -c ${disk} > /dev/null`)));
    }
    const mibS = (ms: number[]) => (SIZE_MIB / (Math.min(...ms) / 1000)).toFixed(0);
    const list = (ms: number[]) => ms.map((m) => m.toFixed(0)).join(',');
    console.log(
      `raw ms ${list(raw)}; gzip ms ${list(gz)} (${wire} bytes on the wire); cat ms ${list(cat)}; gzip -1 ms ${list(gzip1)}`,
    );
    console.log(
      `BENCH export export_raw_mib_s=${mibS(raw)} export_gzip_mib_s=${mibS(gz)} reference_cat_mib_s=${mibS(cat)} reference_gzip1_mib_s=${mibS(gzip1)}`,
    );
  } finally {
    await stop?.();
    if (pool) {
      execFileSync('rm', ['-rf', join(pool.dir, 'bench-mount')]);
      execFileSync('sync', ['-f', pool.dir]);
    }
    await pool?.cleanup();
  }
}

await main();
