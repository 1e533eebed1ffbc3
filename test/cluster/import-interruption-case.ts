/**
 * Issue 25's interrupted imports on the real cluster (a case of datavolume-vm.test.ts): a
 * pod serves a 256 MiB raw image throttled to 16 MiB/s per path, so an import takes
 * seconds and what the test does lands mid-import.
 *
 * - The importer pod killed (`--grace-period=0 --force`, by the API) after 48 MiB went
 *   out: the DataVolume's controller starts a new importer, counts the restart in
 *   `status.restartCount`, the source is read again from its start, the DataVolume ends
 *   Succeeded, and the claim's `disk.img` holds exactly the served bytes (sha256 from a pod
 *   reading the claim, against the server's).
 * - A DataVolume deleted after 48 MiB: its importer pod, claim and PV go, and the pool holds
 *   neither its volume nor anything half-made or half-deleted (`volumes/`, `tmp/`).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import type { StorageCluster } from './storage-cluster';

const CDI = { group: 'cdi.kubevirt.io', version: 'v1beta1', plural: 'datavolumes' };
const MiB = 1 << 20;
const IMAGE_BYTES = 256 * MiB;
/** How much of the image went out before the kill or delete. */
const INTERRUPT_AT = 48 * MiB;

/**
 * The slow server: every path serves the same 256 MiB (a 1 MiB pseudo-random pattern, each
 * MiB stamped with its index, so a misplaced MiB changes the sum), by ranges, at 16 MiB/s
 * per path, advertising ranges (the importer streams it through nbdkit); `/sha256` answers
 * the image's sum. It logs `<path> <first byte> <end>` per range.
 */
const SLOW_SERVER = `
const http=require('http'),crypto=require('crypto');
const SIZE=${IMAGE_BYTES},M=1<<20,RATE=16*M;
const pat=Buffer.alloc(M);let x=12345;for(let i=0;i<M;i+=4){x=(Math.imul(x,1103515245)+12345)>>>0;pat.writeUInt32LE(x,i)}
const mib=i=>{const b=Buffer.from(pat);b.writeUInt32LE(i,0);b.writeUInt32LE(0xfeedface,4);return b};
const h=crypto.createHash('sha256');for(let i=0;i<SIZE/M;i++)h.update(mib(i));const sum=h.digest('hex');
const next={};
const sleep=ms=>new Promise(r=>setTimeout(r,ms));
http.createServer(async(q,s)=>{
  if(q.url==='/sha256'){s.writeHead(200);return s.end(sum)}
  const r=/^bytes=(\\d+)-(\\d*)$/.exec(q.headers.range||'');
  if(q.method==='HEAD'){s.writeHead(200,{'content-length':SIZE,'accept-ranges':'bytes'});return s.end()}
  if(!r){s.writeHead(200,{'content-length':SIZE});console.log(q.url+' whole');return s.end()}
  const a=+r[1],b=r[2]?Math.min(+r[2],SIZE-1):SIZE-1;
  console.log(q.url+' '+a+' '+(b+1));
  s.writeHead(206,{'content-length':b-a+1,'content-range':'bytes '+a+'-'+b+'/'+SIZE,'accept-ranges':'bytes'});
  for(let o=a;o<=b&&!s.destroyed;){
    const i=Math.floor(o/M),end=Math.min(b+1,(i+1)*M,o+256*1024);
    const chunk=mib(i).subarray(o-i*M,end-i*M);
    const t=Math.max(next[q.url]||0,Date.now())+chunk.length/RATE*1000;next[q.url]=t;
    await sleep(t-Date.now());
    if(!s.write(chunk))await new Promise(r=>{s.once('drain',r);s.once('close',r)});
    o=end;
  }
  s.end();
}).listen(8080);`;

/** A pod of the launcher image running `command`, optionally with `claim` at /data. */
function pod(name: string, image: string, command: string[], claim?: string): V1Pod {
  return {
    metadata: { name },
    spec: {
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 0,
      automountServiceAccountToken: false,
      ...(claim ? { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] } : {}),
      containers: [
        {
          name: 'main',
          image,
          imagePullPolicy: 'Never',
          command,
          ...(claim ? { volumeMounts: [{ name: 'data', mountPath: '/data' }] } : {}),
        },
      ],
    },
  };
}

/** Runs both interruptions (a timeout's error carries the namespace's state). */
export async function importInterruptionCase(fx: StorageCluster): Promise<void> {
  const { core, custom, info } = fx;
  const ns = fx.namespace;
  const image = info.images['virt-launcher'];
  const wait = <T>(what: string, f: () => Promise<T | undefined>, ms: number) =>
    fx.waitOrDiagnose(what, f, ms, 500);
  const readDv = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...CDI, namespace: ns, name }).catch(() => undefined)) as
      | DataVolume
      | undefined;
  const served = async () =>
    (await core.readNamespacedPodLog({ name: 'slow-server', namespace: ns })).split('\n');
  /** The furthest byte served on `path`, and how many times its reading started over at 0. */
  const progress = async (path: string) => {
    const lines = (await served()).filter((l) => l.startsWith(`${path} `));
    const ends = lines.map((l) => Number(l.split(' ')[2]));
    return { furthest: Math.max(0, ...ends), starts: lines.filter((l) => l === `${path} 0 6`).length };
  };

  await core.createNamespacedPod({
    namespace: ns,
    body: pod('slow-server', image, ['node', '-e', SLOW_SERVER]),
  });
  const server = await wait(
    'slow server running',
    async () => {
      const p = await core.readNamespacedPod({ name: 'slow-server', namespace: ns });
      return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
    },
    120_000,
  );
  const url = `http://${server.status?.podIP}:8080`;
  const dv = (name: string) => ({
    apiVersion: 'cdi.kubevirt.io/v1beta1',
    kind: 'DataVolume',
    metadata: { name, namespace: ns },
    spec: {
      source: { http: { url: `${url}/${name}.raw` } },
      storage: { resources: { requests: { storage: '320Mi' } } },
    },
  });
  for (const name of ['dv-killed', 'dv-deleted'])
    await custom.createNamespacedCustomObject({ ...CDI, namespace: ns, body: dv(name) });

  // Both imports under way; both interrupted after INTERRUPT_AT bytes went out.
  for (const name of ['dv-killed', 'dv-deleted'])
    await wait(
      `${name}: ${INTERRUPT_AT} bytes served`,
      async () => ((await progress(`/${name}.raw`)).furthest >= INTERRUPT_AT ? true : undefined),
      240_000,
    );
  // The DataVolume's phase follows its importer pod's Running status, which can come a
  // moment after the first bytes went out: waited for, not read once.
  for (const name of ['dv-killed', 'dv-deleted'])
    await wait(
      `${name} ImportInProgress`,
      async () => ((await readDv(name))?.status?.phase === 'ImportInProgress' ? true : undefined),
      10_000,
    );
  const killedBefore = await readDv('dv-killed');
  expect(killedBefore?.status?.phase).toBe('ImportInProgress');
  expect(killedBefore?.status?.restartCount ?? 0).toBe(0);
  expect((await core.readNamespacedPod({ name: 'importer-dv-killed', namespace: ns })).status?.phase).toBe(
    'Running',
  );
  await core.deleteNamespacedPod({ name: 'importer-dv-killed', namespace: ns, gracePeriodSeconds: 0 });

  const deletedClaim = await core.readNamespacedPersistentVolumeClaim({ name: 'dv-deleted', namespace: ns });
  const pvName = deletedClaim.spec?.volumeName ?? '';
  const handle = (await core.readPersistentVolume({ name: pvName })).spec?.csi?.volumeHandle ?? '';
  expect(handle).toMatch(/^v-[0-9a-f]{32}$/);
  expect(await fx.csi!.volumes()).toContain(handle);
  expect((await readDv('dv-deleted'))?.status?.phase).toBe('ImportInProgress');
  await custom.deleteNamespacedCustomObject({ ...CDI, namespace: ns, name: 'dv-deleted' });

  // The killed import: retried by a new pod, read again from the start, Succeeded.
  const done = await wait(
    'dv-killed Succeeded',
    async () => {
      const d = await readDv('dv-killed');
      if (d?.status?.phase === 'Failed') throw new Error(`dv-killed failed: ${JSON.stringify(d.status)}`);
      return d?.status?.phase === 'Succeeded' ? d : undefined;
    },
    300_000,
  );
  expect(done.status).toMatchObject({ restartCount: 1, progress: '100.0%' });
  const again = await progress('/dv-killed.raw');
  expect(again.starts).toBe(2);
  expect(again.furthest).toBe(IMAGE_BYTES);
  const ev = (await core.listNamespacedEvent({ namespace: ns })).items.filter(
    (e) => e.involvedObject.name === 'dv-killed',
  );
  expect(ev.map((e) => e.reason)).toContain('ImportSucceeded');

  // The claim holds the served bytes, whole (the disk is grown past them: only the image's part is summed).
  await core.createNamespacedPod({
    namespace: ns,
    body: pod(
      'sum-reader',
      image,
      ['busybox', 'sh', '-c', `busybox head -c ${IMAGE_BYTES} /data/disk.img | busybox sha256sum`],
      'dv-killed',
    ),
  });
  await wait(
    'sum-reader done',
    async () => {
      const p = await core.readNamespacedPod({ name: 'sum-reader', namespace: ns });
      if (p.status?.phase === 'Failed') throw new Error('sum-reader failed');
      return p.status?.phase === 'Succeeded' ? true : undefined;
    },
    180_000,
  );
  const got = (await core.readNamespacedPodLog({ name: 'sum-reader', namespace: ns })).split(/\s/)[0];
  const want = await (await fetch(`${url}/sha256`)).text();
  expect(got).toMatch(/^[0-9a-f]{64}$/);
  expect(got).toBe(want);

  // The deleted DataVolume: pod, claim, PV and the pool's volume gone, nothing half-made left.
  await wait(
    'dv-deleted, its importer pod, claim and PV gone',
    async () => {
      const gone = async (f: () => Promise<unknown>) =>
        f().then(
          () => false,
          (e: { code?: number }) => e.code === 404,
        );
      const all = [
        await gone(() => custom.getNamespacedCustomObject({ ...CDI, namespace: ns, name: 'dv-deleted' })),
        await gone(() => core.readNamespacedPod({ name: 'importer-dv-deleted', namespace: ns })),
        await gone(() => core.readNamespacedPersistentVolumeClaim({ name: 'dv-deleted', namespace: ns })),
        await gone(() => core.readPersistentVolume({ name: pvName })),
      ];
      return all.every(Boolean) ? true : undefined;
    },
    240_000,
  );
  await wait(
    'the volume gone from the pool',
    async () => ((await fx.csi!.volumes()).includes(handle) ? undefined : true),
    60_000,
  );
  expect(await readdir(join(fx.csi!.pool.dir, 'tmp')).catch(() => [])).toEqual([]);
}
