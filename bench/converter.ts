/**
 * Converter throughput: conversions per second (VMI -> domain model -> XML string) on one
 * core for a small VMI (the vmi-containerdisk fixture), the vmi-windows fixture, and a
 * large VMI with 16 disks and 8 NICs. Admission (defaulting) runs once, outside the timed loop, as
 * in the launcher, which receives an already admitted VMI.
 *
 * Run: npm run bench:converter
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { createClusterConfig } from '../src/api/config/cluster-config';
import { defaultVirtualMachineInstance } from '../src/api/defaults';
import type { VirtualMachineInstance } from '../src/api/generated/types';
import { convertVMIToXML, defaultConverterContext } from '../src/converter';

const examples = path.resolve(import.meta.dirname, '../test/fixtures/manifests');
const config = createClusterConfig({}, { hostArchitecture: 'amd64' });
const admit = (v: VirtualMachineInstance) => defaultVirtualMachineInstance(v, config);
const example = (f: string) =>
  admit(parse(readFileSync(path.join(examples, f), 'utf8')) as VirtualMachineInstance);

function large(): VirtualMachineInstance {
  const disks = Array.from({ length: 16 }, (_, i) => `disk${i}`);
  const nics = Array.from({ length: 8 }, (_, i) => `net${i}`);
  return admit({
    metadata: { name: 'large', namespace: 'bench', uid: '00000000-0000-4000-8000-000000000001' },
    spec: {
      domain: {
        cpu: { sockets: 2, cores: 4, threads: 2 },
        memory: { guest: '32Gi' },
        ioThreadsPolicy: 'auto',
        devices: {
          rng: {},
          disks: disks.map((name, i) => ({
            name,
            serial: `SER${i}`,
            disk: { bus: i % 4 === 3 ? 'scsi' : 'virtio' },
          })),
          interfaces: nics.map((name, i) => (i === 0 ? { name, masquerade: {} } : { name, bridge: {} })),
        },
      },
      networks: nics.map((name, i) =>
        i === 0 ? { name, pod: {} } : { name, multus: { networkName: `nad-${i}` } },
      ),
      volumes: disks.map((name, i) =>
        i === 0
          ? { name, containerDisk: { image: 'quay.io/containerdisks/fedora:40' } }
          : i % 2
            ? { name, persistentVolumeClaim: { claimName: name } }
            : { name, emptyDisk: { capacity: '10Gi' } },
      ),
    },
  });
}

const ctx = defaultConverterContext();
const cases: [string, VirtualMachineInstance][] = [
  ['small', example('vmi-containerdisk.yaml')],
  ['windows', example('vmi-windows.yaml')],
  ['large', large()],
];

/**
 * Calls per second of `fn`: a warm-up (so the JIT has optimized the path), then three
 * one-second rounds; the best round is reported, since other processes on a shared machine
 * only ever slow a round down.
 */
function rate(fn: () => void): number {
  for (let i = 0; i < 3000; i++) fn();
  let best = 0;
  for (let round = 0; round < 3; round++) {
    let n = 0;
    const start = process.hrtime.bigint();
    let elapsed = 0n;
    while (elapsed < 1_000_000_000n) {
      for (let i = 0; i < 100; i++) fn();
      n += 100;
      elapsed = process.hrtime.bigint() - start;
    }
    best = Math.max(best, n / (Number(elapsed) / 1e9));
  }
  return best;
}

const results: Record<string, number> = {};
for (const [name, vmi] of cases) {
  const bytes = convertVMIToXML(vmi, ctx).length;
  const perSec = rate(() => convertVMIToXML(vmi, ctx));
  results[name] = Math.round(perSec);
  console.log(
    `${name.padEnd(8)} ${results[name].toString().padStart(8)} conversions/s  ${(1e6 / perSec).toFixed(1).padStart(7)} µs each  ${bytes} bytes of XML`,
  );
}
console.log(`BENCH converter small=${results.small}/s windows=${results.windows}/s large=${results.large}/s`);
