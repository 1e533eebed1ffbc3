/**
 * `npm run bench:network`: TCP through local mode's pod network and through the masquerade
 * binding into the tiny guest. Two pods on a bench bridge (real CNI bridge + host-local),
 * network setup phase 1 and the launcher's DHCP server in one of them, the tiny guest
 * under QEMU (TCG) on its tap. From the other
 * pod: echo throughput (bytes sent and echoed back over the wall time) and the median
 * round trip of 1-byte messages, once to an echo server in the first pod (pod_*), once to
 * the guest's busybox echo through the pod IP (guest_*). Bounded: 64 MiB / 200 round trips
 * to the pod, 4 MiB / 30 round trips to the guest (TCG bounds the guest figures).
 * Ends with `BENCH network guest_tcp_mbps= pod_tcp_mbps= guest_rtt_ms= pod_rtt_ms=`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VirtualMachineInstance } from '../src/api/generated/types';
import { netnsName, PodNetwork } from '../src/controllers/local/pod-runtime/pod-network';
import { setUpPodNetwork } from '../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking, networkGuestDir } from '../test/support/net-snapshot';
import { ECHO_SERVER, inNs, type NsProcess, startInNs } from '../test/support/netns-process';

// Client: echo throughput of N bytes, then K one-byte round trips; prints JSON.
const CLIENT = `const net=require('net');const [h,p,n,k]=process.argv.slice(1);
const tput=()=>new Promise((res,rej)=>{const c=net.connect(+p,h,()=>{const t0=process.hrtime.bigint();let recv=0,sent=0;const buf=Buffer.alloc(65536,7);
const pump=()=>{while(sent<+n){const ch=buf.subarray(0,Math.min(buf.length,+n-sent));sent+=ch.length;if(!c.write(ch)){c.once('drain',pump);return}}c.end()};pump();
c.on('data',d=>{recv+=d.length});c.on('close',()=>res({bytes:recv,s:Number(process.hrtime.bigint()-t0)/1e9}))});c.on('error',rej)});
const rtt=()=>new Promise((res,rej)=>{const c=net.connect(+p,h,()=>{c.setNoDelay(true);const times=[];let t;const one=()=>{t=process.hrtime.bigint();c.write('x')};
c.on('data',()=>{times.push(Number(process.hrtime.bigint()-t)/1e6);if(times.length<+k)one();else{c.destroy();res(times)}});one()});c.on('error',rej)});
(async()=>{const a=await tput();const r=(await rtt()).sort((x,y)=>x-y);console.log(JSON.stringify({bytes:a.bytes,mbps:a.bytes*8/a.s/1e6,rtt:r[r.length>>1]}))})().catch(e=>{console.log(JSON.stringify({error:e.message}));process.exit(1)})`;

interface Figures {
  bytes: number;
  mbps: number;
  rtt: number;
}

function measure(ns: string, host: string, port: number, bytes: number, rounds: number): Figures {
  const out = inNs(
    ns,
    process.execPath,
    ['-e', CLIENT, host, String(port), String(bytes), String(rounds)],
    300_000,
  );
  const f = JSON.parse(out.trim().split('\n').pop() ?? '{}') as Figures & { error?: string };
  if (f.error) throw new Error(`client to ${host}:${port}: ${f.error}`);
  if (f.bytes !== bytes) throw new Error(`client to ${host}:${port}: ${f.bytes} of ${bytes} bytes came back`);
  return f;
}

async function main(): Promise<void> {
  if (!canTestNetworking())
    throw new Error('bench:network needs root and /usr/lib/cni (containernetworking-plugins)');
  const guest = networkGuestDir();
  if (!guest)
    throw new Error('bench:network needs the tiny guest of recipe 7 or later: run scripts/guest/build.sh');
  const root = mkdtempSync(join(tmpdir(), 'kvts-bench-net-'));
  const bridge = `kvtsb${process.pid % 10000}`;
  const net = new PodNetwork({
    bridge,
    subnet: '10.244.83.0/24',
    pluginDir: '/usr/lib/cni',
    dataDir: join(root, 'cni'),
  });
  const launcherUid = 'bbbbbbbb-0000-4000-8000-000000000001';
  const peerUid = 'bbbbbbbb-0000-4000-8000-000000000002';
  const procs: NsProcess[] = [];
  for (const d of ['launcher', 'peer', 'sockets']) mkdirSync(join(root, d));
  try {
    const launcher = await net.setUp(launcherUid, join(root, 'launcher'));
    await net.setUp(peerUid, join(root, 'peer'));
    const lns = netnsName(launcherUid);
    const pns = netnsName(peerUid);

    procs.push(await startInNs(lns, process.execPath, ['-e', ECHO_SERVER, '9000'], 'ready'));
    const pod = measure(pns, launcher.ip, 9000, 64 << 20, 200);
    process.stdout.write(
      `pod: ${pod.bytes} bytes echoed at ${pod.mbps.toFixed(1)} Mbit/s, median RTT ${pod.rtt.toFixed(3)} ms\n`,
    );

    const vmi = {
      metadata: { name: 'bench', namespace: 'default', uid: 'bbbbbbbb-1111-4000-8000-000000000003' },
      spec: {
        domain: { devices: { interfaces: [{ name: 'default', masquerade: {}, ports: [{ port: 8080 }] }] } },
        networks: [{ name: 'default', pod: {} }],
      },
    } as VirtualMachineInstance;
    const [cached] = await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(root, 'sockets') });
    procs.push(
      await startInNs(
        lns,
        process.execPath,
        ['--import', 'tsx', 'test/support/dhcp-server-main.ts', join(root, 'sockets')],
        'ready',
      ),
    );
    const kernel = join(guest, existsSync(join(guest, 'vmlinuz.bzImage')) ? 'vmlinuz.bzImage' : 'vmlinuz');
    // biome-ignore format: QEMU's options read better in pairs
    procs.push(await startInNs(lns, 'qemu-system-x86_64', [
      '-machine', 'q35,accel=tcg', '-m', '256', '-smp', '1', '-nodefaults', '-no-user-config',
      '-display', 'none', '-serial', 'stdio', '-monitor', 'none', '-no-reboot',
      '-kernel', kernel, '-initrd', join(guest, 'initrd.img'), '-append', 'console=ttyS0 quiet',
      '-netdev', `tap,id=n0,ifname=${cached.tap},script=no,downscript=no`,
      '-device', `virtio-net-pci,netdev=n0,mac=${cached.mac},romfile=`,
    ], 'KUBEVIRT-TS-GUEST-LISTENING', 240_000));
    const vm = measure(pns, launcher.ip, 8080, 4 << 20, 30);
    process.stdout.write(
      `guest: ${vm.bytes} bytes echoed at ${vm.mbps.toFixed(1)} Mbit/s, median RTT ${vm.rtt.toFixed(3)} ms (TCG)\n`,
    );
    process.stdout.write(
      `BENCH network guest_tcp_mbps=${vm.mbps.toFixed(1)} pod_tcp_mbps=${pod.mbps.toFixed(1)} guest_rtt_ms=${vm.rtt.toFixed(3)} pod_rtt_ms=${pod.rtt.toFixed(3)}\n`,
    );
  } finally {
    for (const p of procs) p.child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    await net.tearDown(launcherUid, join(root, 'launcher')).catch(() => undefined);
    await net.tearDown(peerUid, join(root, 'peer')).catch(() => undefined);
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // never made
    }
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`bench:network: ${(e as Error).message}\n`);
  process.exit(1);
});
