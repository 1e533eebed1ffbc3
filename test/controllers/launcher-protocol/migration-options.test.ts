/**
 * MigrateVirtualMachine's options: upstream's MigrationOptions JSON (Go field names)
 * turned into the driver's options, the target URI from the VMI's migration state, and
 * bad values refused naming the field.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { parseMigrationRequest } from '../../../src/controllers/launcher-protocol/migration-options';

const vmi = (targetNodeAddress?: string): VirtualMachineInstance => ({
  metadata: { name: 'vm1', namespace: 'ns1', uid: 'u' },
  spec: { domain: { devices: {} } },
  status: { migrationState: { migrationUid: 'mig-7', targetNodeAddress } },
});
const raw = (o: unknown) => new Uint8Array(Buffer.from(JSON.stringify(o)));
const S = 'VirtualMachineInstance ns1/vm1';

describe('parseMigrationRequest', () => {
  it('maps upstream options to driver options and timeouts', () => {
    const plan = parseMigrationRequest(
      raw({
        Bandwidth: '64Mi',
        ProgressTimeout: 150,
        CompletionTimeoutPerGiB: 800,
        UnsafeMigration: true,
        AllowAutoConverge: true,
        AllowPostCopy: false,
        ParallelMigrationThreads: null,
        TargetURI: 'qemu+unix:///system?socket=/run/x/libvirt-sock',
        MigrateURI: 'tcp://10.0.0.7',
      }),
      vmi(),
      S,
    );
    expect(plan).toEqual({
      uid: 'mig-7',
      targetUri: 'qemu+unix:///system?socket=/run/x/libvirt-sock',
      targetXml: '',
      driver: {
        bandwidthMiBps: 64,
        allowAutoConverge: true,
        allowPostCopy: false,
        unsafe: true,
        migrateUri: 'tcp://10.0.0.7',
      },
      progressTimeoutSeconds: 150,
      completionTimeoutPerGiB: 800,
      allowWorkloadDisruption: false,
    });
  });

  it("DisksURI makes a block migration of the local disks (the proxy's 49153 socket), as upstream classifies volumes", () => {
    const block: VirtualMachineInstance = {
      ...vmi(),
      spec: {
        domain: { devices: {} },
        volumes: [
          { name: 'root', containerDisk: { image: 'tiny' } },
          { name: 'ci', cloudInitNoCloud: { userData: '#cloud-config' } },
          { name: 'scratch', emptyDisk: { capacity: '1Mi' } },
          { name: 'data', persistentVolumeClaim: { claimName: 'rwx' } },
          { name: 'hd', hostDisk: { path: '/x.img', type: 'Disk', shared: true } },
        ],
      },
      status: { migrationState: { migrationUid: 'mig-7' }, migrationMethod: 'BlockMigration' },
    };
    const sock = 'unix:///var/run/kubevirt/migrationproxy/u-49153-source.sock';
    const plan = parseMigrationRequest(raw({ TargetURI: 'fake://x', DisksURI: sock }), block, S);
    expect(plan.driver.disksUri).toBe(sock);
    expect(plan.driver.blockMigration).toEqual({ shared: ['data', 'hd'], generated: ['root', 'ci'] });
    // Without the disks socket nothing is copied (as before the proxy).
    expect(
      parseMigrationRequest(raw({ TargetURI: 'fake://x' }), block, S).driver.blockMigration,
    ).toBeUndefined();
    expect(() => parseMigrationRequest(raw({ TargetURI: 'fake://x', DisksURI: 'nbd:x' }), block, S)).toThrow(
      `${S}: migration options.DisksURI: "nbd:x" is not a tcp:// or unix:// URI`,
    );
    expect(() => parseMigrationRequest(raw({ TargetURI: 'fake://x', DisksURI: sock }), vmi(), S)).toThrow(
      `${S}: migration options.DisksURI: given, but status.migrationMethod is "", not BlockMigration`,
    );
  });

  it('ParallelMigrationThreads becomes parallel connections, except with post-copy (as upstream)', () => {
    const opts = (o: object) => parseMigrationRequest(raw({ TargetURI: 'fake://x', ...o }), vmi(), S).driver;
    expect(opts({ ParallelMigrationThreads: 4 }).parallelConnections).toBe(4);
    expect(opts({ ParallelMigrationThreads: 4, AllowPostCopy: true }).parallelConnections).toBeUndefined();
    expect(() => opts({ ParallelMigrationThreads: 0 })).toThrow(
      `${S}: migration options.ParallelMigrationThreads: must be a positive integer`,
    );
  });

  it('defaults the target to qemu+tcp on status.migrationState.targetNodeAddress; "0" bandwidth is unlimited', () => {
    const plan = parseMigrationRequest(raw({ Bandwidth: '0' }), vmi('10.0.0.7:16509'), S);
    expect(plan.targetUri).toBe('qemu+tcp://10.0.0.7:16509/system');
    expect(plan.driver.bandwidthMiBps).toBe(0);
  });

  it('refuses bad values naming the field', () => {
    const err = (o: unknown, v = vmi()) => {
      try {
        parseMigrationRequest(raw(o), v, S);
      } catch (e) {
        return (e as Error).message;
      }
      return 'no error';
    };
    expect(err({})).toBe(
      `${S}: status.migrationState.targetNodeAddress: required to reach the target (or give migration options.TargetURI)`,
    );
    expect(err({}, vmi('node 2; rm -rf /'))).toBe(
      `${S}: status.migrationState.targetNodeAddress: "node 2; rm -rf /" is not a host or host:port`,
    );
    expect(err({ TargetURI: 'not a uri' })).toBe(
      `${S}: migration options.TargetURI: "not a uri" is not a libvirt URI`,
    );
    expect(err({ TargetURI: 'fake://x', ProgressTimeout: -1 })).toBe(
      `${S}: migration options.ProgressTimeout: must be a non-negative integer`,
    );
    expect(err({ TargetURI: 'fake://x', AllowPostCopy: 'yes' })).toBe(
      `${S}: migration options.AllowPostCopy: must be a boolean`,
    );
    expect(err({ TargetURI: 'fake://x', MigrateURI: 'ftp://x' })).toBe(
      `${S}: migration options.MigrateURI: "ftp://x" is not a tcp://, unix:// or rdma:// URI`,
    );
    expect(err({ TargetURI: 'fake://x', Bandwidth: '-5Mi' })).toBe(
      `${S}: migration options.Bandwidth: "-5Mi" is not a non-negative quantity`,
    );
  });
});
