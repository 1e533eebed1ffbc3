import { describe, expect, it } from 'vitest';
import { QuantityError } from '../../../../src/controllers/common/quantity';
import {
  memoryOverhead,
  type OverheadInput,
  vcpuCount,
} from '../../../../src/controllers/virt-controller/services/memory-overhead';

const Mi = 1n << 20n;

// Expected values are upstream's GetMemoryOverhead (pkg/hypervisor/kvm/hypervisorbackend.go)
// computed by hand. Terms:
//   pagetable(m) = floor(ceil(m / 1000) * 1000 / 512)        (kB-rounded request / 512)
//   fixed        = 25 + 100 + 25 + 40 + 50 Mi = 240Mi        (monitor, launcher, virtlogd, virtqemud, qemu)
//   iothread     = 8Mi, video = 32Mi (unless autoattachGraphicsDevice=false), vcpu = 8Mi each
// 240Mi + 8Mi = 248Mi = 260046848 bytes.
function vmi(spec: OverheadInput['spec']): OverheadInput {
  return { spec };
}
const mem = (memory: string, extra: Record<string, string> = {}) => ({ requests: { memory, ...extra } });

const cases: Array<{ name: string; input: OverheadInput; arch?: string; ratio?: string; expected: bigint }> =
  [
    {
      // pagetable(1Gi) = ceil(1073741824/1000)=1073742 kB -> 1073742000/512 = 2097152
      // 2097152 + 248Mi + 32Mi + 1*8Mi = 2097152 + 288Mi = 2097152 + 301989888 = 304087040
      name: '1Gi, no cpu topology (1 vCPU by default)',
      input: vmi({ domain: { resources: mem('1Gi') } }),
      expected: 304087040n,
    },
    {
      // pagetable(2Gi) = 2147484 kB -> 2147484000/512 = 4194304
      // 4194304 + 248Mi + 32Mi + 8 vCPUs * 8Mi (2 cores * 2 sockets * 2 threads) = 4194304 + 344Mi = 364904448
      name: '2Gi, 2 sockets x 2 cores x 2 threads',
      input: vmi({ domain: { resources: mem('2Gi'), cpu: { cores: 2, sockets: 2, threads: 2 } } }),
      expected: 364904448n,
    },
    {
      // pagetable(1G = 10^9) = 1000000 kB -> 10^9/512 = 1953125
      // 1953125 + 248Mi + 8Mi (no video RAM) = 1953125 + 268435456 = 270388581
      name: '1G decimal, graphics disabled',
      input: vmi({ domain: { resources: mem('1G'), devices: { autoattachGraphicsDevice: false } } }),
      expected: 270388581n,
    },
    {
      // no cpu topology: vCPUs from limits.cpu (5) over requests.cpu (3)
      // pagetable(64Mi) = 67109 kB -> 67109000/512 = 131072 (floor of 131072.2)
      // 131072 + 248Mi + 32Mi + 5*8Mi = 131072 + 320Mi = 131072 + 335544320 = 335675392
      name: '64Mi, vCPUs from cpu limit 5 (request 3)',
      input: vmi({ domain: { resources: { requests: { memory: '64Mi', cpu: '3' }, limits: { cpu: '5' } } } }),
      expected: 335675392n,
    },
    {
      // pagetable(512M) = 512000 kB -> 512000000/512 = 1000000
      // 1000000 + 248Mi + 32Mi + 3*8Mi = 1000000 + 304Mi = 1000000 + 318767104 = 319767104
      name: '512M, vCPUs from cpu request 3',
      input: vmi({ domain: { resources: mem('512M', { cpu: '3' }) } }),
      expected: 319767104n,
    },
    {
      // cpu request 500m: Value() rounds up to 1 vCPU. arm64 adds 128Mi of pflash.
      // pagetable(1500M) = 1500000 kB -> 1500000000/512 = 2929687 (floor of 2929687.5)
      // 2929687 + 248Mi + 32Mi + 8Mi + 128Mi = 2929687 + 416Mi = 2929687 + 436207616 = 439137303
      name: '1500M on arm64, cpu 500m',
      input: vmi({ domain: { resources: mem('1500M', { cpu: '500m' }) } }),
      arch: 'arm64',
      expected: 439137303n,
    },
    {
      // VFIO (host device, GPU or SR-IOV) adds 1Gi once.
      // pagetable(4Gi) = 4294968 kB -> 4294968000/512 = 8388609 (floor of 8388609.375)
      // 8388609 + 288Mi + 1Gi = 8388609 + 301989888 + 1073741824 = 1384120321
      name: '4Gi with a host device, a GPU and an SR-IOV interface',
      input: vmi({
        domain: {
          resources: mem('4Gi'),
          devices: {
            hostDevices: [{ name: 'h', deviceName: 'x/y' }],
            gpus: [{ name: 'g', deviceName: 'nvidia/a' }],
            interfaces: [{ name: 's', sriov: {} }],
          },
        },
      }),
      expected: 1384120321n,
    },
    {
      // TPM 53Mi + SEV 256Mi + downwardMetrics volume 1Mi
      // 2097152 + 288Mi + 310Mi = 2097152 + 598Mi = 2097152 + 627048448 = 629145600
      name: '1Gi with TPM, SEV and a downwardMetrics volume',
      input: vmi({
        domain: { resources: mem('1Gi'), devices: { tpm: {} }, launchSecurity: { sev: {} } },
        volumes: [{ name: 'dm', downwardMetrics: {} } as { downwardMetrics: unknown }],
      }),
      expected: 629145600n,
    },
    {
      // exec probes: 10Mi each + 100Mi once for virt-probe
      // 2097152 + 288Mi + 120Mi = 2097152 + 408Mi = 2097152 + 427819008 = 429916160
      name: '1Gi with exec liveness and readiness probes',
      input: vmi({
        domain: { resources: mem('1Gi') },
        livenessProbe: { exec: { command: ['true'] } },
        readinessProbe: { exec: { command: ['true'] } },
      }),
      expected: 429916160n,
    },
    {
      // dedicated CPUs add 100Mi; 4 cores -> 32Mi
      // 2097152 + 248Mi + 32Mi + 32Mi + 100Mi = 2097152 + 412Mi = 2097152 + 432013312 = 434110464
      name: '1Gi, 4 dedicated cores',
      input: vmi({ domain: { resources: mem('1Gi'), cpu: { cores: 4, dedicatedCpuPlacement: true } } }),
      expected: 434110464n,
    },
    {
      // requests == limits for cpu and memory: Guaranteed QoS adds 100Mi; no topology, vCPUs from limit 2
      // 2097152 + 248Mi + 32Mi + 16Mi + 100Mi = 2097152 + 396Mi = 2097152 + 415236096 = 417333248
      name: '1Gi guaranteed QoS (requests == limits)',
      input: vmi({
        domain: { resources: { requests: { memory: '1Gi', cpu: '2' }, limits: { memory: '1Gi', cpu: '2' } } },
      }),
      expected: 417333248n,
    },
    {
      // reservedOverhead.addedOverhead 100G = 10^11 bytes added verbatim
      // 304087040 + 100000000000 = 100304087040
      name: '1Gi with reservedOverhead.addedOverhead 100G',
      input: vmi({
        domain: { resources: mem('1Gi'), memory: { reservedOverhead: { addedOverhead: '100G' } } },
      }),
      expected: 100304087040n,
    },
    {
      // odd byte count: pagetable(1234567) = ceil(1234.567)=1235 kB -> 1235000/512 = 2412 (floor of 2412.1)
      // 2412 + 288Mi = 2412 + 301989888 = 301992300
      name: 'an odd byte count (1234567)',
      input: vmi({ domain: { resources: mem('1234567') } }),
      expected: 301992300n,
    },
    {
      // additionalGuestMemoryOverheadRatio 2.332: kilo = ceil(304087040/1000) = 304088;
      // trunc(304088 * 1.332) = 405045 kB -> 304087040 + 405045000 = 709132040
      name: '1Gi with additional overhead ratio 2.332',
      input: vmi({ domain: { resources: mem('1Gi') } }),
      ratio: '2.332',
      expected: 709132040n,
    },
    {
      // A ratio that is not a float is ignored, as upstream does (admission rejects it first).
      name: '1Gi with an unparsable ratio',
      input: vmi({ domain: { resources: mem('1Gi') } }),
      ratio: 'no_float',
      expected: 304087040n,
    },
    {
      // A disabled TPM adds nothing.
      name: '1Gi with tpm.enabled=false',
      input: vmi({ domain: { resources: mem('1Gi'), devices: { tpm: { enabled: false } } } }),
      expected: 304087040n,
    },
  ];

describe('memoryOverhead (upstream GetMemoryOverhead)', () => {
  it.each(cases)('$name', ({ input, arch, ratio, expected }) => {
    expect(memoryOverhead(input, { arch, additionalOverheadRatio: ratio })).toBe(expected);
  });

  it('is the same for Mi-expressed memory as for its exact byte count', () => {
    const a = memoryOverhead(vmi({ domain: { resources: mem('3Gi') } }));
    const b = memoryOverhead(vmi({ domain: { resources: mem(String(3n * 1024n * Mi)) } }));
    expect(a).toBe(b);
  });

  it('names the field of a malformed quantity', () => {
    expect(() => memoryOverhead(vmi({ domain: { resources: mem('lots') } }))).toThrow(QuantityError);
    expect(() => memoryOverhead(vmi({ domain: { resources: mem('lots') } }))).toThrow(
      /spec\.domain\.resources\.requests\.memory: invalid quantity "lots"/,
    );
  });
});

describe('vcpuCount (hardware.GetNumberOfVCPUs)', () => {
  it.each([
    [{ cores: 2 }, 2],
    [{ sockets: 3 }, 3],
    [{ threads: 2 }, 2],
    [{ cores: 2, sockets: 2 }, 4],
    [{ cores: 0, sockets: 2, threads: 4 }, 8],
    [{}, 0],
  ])('%j -> %i', (cpu, n) => {
    expect(vcpuCount(cpu)).toBe(n);
  });
});
