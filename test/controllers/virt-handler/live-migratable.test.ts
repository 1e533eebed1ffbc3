/**
 * Upstream's LiveMigratable condition (virt-handler calculateLiveMigrationCondition):
 * True for a masquerade containerDisk VMI (block-migrated), False with upstream's reason
 * and message for host devices, SEV, unshared claims and host disks; a CD-ROM and a shared
 * ReadWriteMany claim need no copy.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { liveMigrationCondition } from '../../../src/controllers/virt-handler/live-migratable';

const base = (): VirtualMachineInstance => ({
  metadata: { name: 'v', namespace: 'ns' },
  spec: {
    domain: {
      devices: {
        disks: [{ name: 'root', disk: {} }],
        interfaces: [{ name: 'default', masquerade: {} }],
      },
    },
    networks: [{ name: 'default', pod: {} }],
    volumes: [{ name: 'root', containerDisk: { image: 'tiny' } }],
  },
});

describe('LiveMigratable condition', () => {
  it('a masquerade containerDisk VMI is migratable and block-migrates its disk', () => {
    expect(liveMigrationCondition(base())).toEqual({
      condition: { type: 'LiveMigratable', status: 'True' },
      blockMigration: true,
    });
  });

  it('a shared claim and a CD-ROM need no block migration', () => {
    const v = base();
    v.spec.domain.devices!.disks = [
      { name: 'root', disk: {} },
      { name: 'iso', cdrom: {} },
    ];
    v.spec.volumes = [
      { name: 'root', persistentVolumeClaim: { claimName: 'rwx' } },
      { name: 'iso', containerDisk: { image: 'iso' } },
    ];
    v.status = {
      volumeStatus: [
        { name: 'root', target: 'vda', persistentVolumeClaimInfo: { accessModes: ['ReadWriteMany'] } },
      ],
    };
    expect(liveMigrationCondition(v)).toEqual({
      condition: { type: 'LiveMigratable', status: 'True' },
      blockMigration: false,
    });
  });

  it("refuses with upstream's reasons", () => {
    const rwo = base();
    rwo.spec.volumes = [{ name: 'root', persistentVolumeClaim: { claimName: 'data' } }];
    rwo.status = {
      volumeStatus: [
        { name: 'root', target: 'vda', persistentVolumeClaimInfo: { accessModes: ['ReadWriteOnce'] } },
      ],
    };
    expect(liveMigrationCondition(rwo).condition).toEqual({
      type: 'LiveMigratable',
      status: 'False',
      reason: 'DisksNotLiveMigratable',
      message:
        'cannot migrate VMI: PVC data is not shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)',
    });
    const unknown = base();
    unknown.spec.volumes = [{ name: 'root', dataVolume: { name: 'dv' } }];
    expect(liveMigrationCondition(unknown).condition.message).toBe(
      'cannot migrate VMI: Unable to determine if PVC dv is shared, live migration requires that all PVCs must be shared (using ReadWriteMany access mode)',
    );
    const host = base();
    host.spec.volumes = [{ name: 'root', hostDisk: { path: '/x.img', type: 'Disk' } }];
    expect(liveMigrationCondition(host).condition).toMatchObject({
      reason: 'DisksNotLiveMigratable',
      message: 'cannot migrate VMI with non-shared HostDisk',
    });
    host.spec.volumes = [{ name: 'root', hostDisk: { path: '/x.img', type: 'Disk', shared: true } }];
    expect(liveMigrationCondition(host).condition.status).toBe('True');
    const dev = base();
    dev.spec.domain.devices!.hostDevices = [{ name: 'h', deviceName: 'x/y' }];
    expect(liveMigrationCondition(dev).condition).toMatchObject({
      reason: 'HostDeviceNotLiveMigratable',
      message: 'VMI specifies non-migratable generic PCI host device',
    });
    const sev = base();
    sev.spec.domain.launchSecurity = { sev: {} };
    expect(liveMigrationCondition(sev).condition).toMatchObject({
      reason: 'SEVNotLiveMigratable',
      message: 'VMI uses SEV',
    });
    // The network reason comes first, as upstream's order.
    const bridged = base();
    bridged.spec.domain.devices!.interfaces = [{ name: 'default', bridge: {} }];
    bridged.spec.domain.launchSecurity = { sev: {} };
    expect(liveMigrationCondition(bridged).condition.reason).toBe('InterfaceNotLiveMigratable');
  });
});
