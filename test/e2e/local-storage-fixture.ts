/**
 * Local mode with its storage, for the e2e files that run real guests on dynamically
 * provisioned volumes (datavolume-local.test.ts, clone-local.test.ts): a LocalNode on a
 * fresh state directory (its CSI pool mounted on first use), a loopback HTTP server that
 * serves the tiny guest's bootable qcow2, and the steps those files share: a VM whose
 * dataVolumeTemplate imports it, waiting for a DataVolume, the guest's console, start and
 * stop. `stop()` checks that the pool was unmounted before it removes the state.
 * Pods share the host's network unless a pod network is asked for (uploads need one: its
 * bridge is deleted at `stop()`).
 */

import { execFileSync } from 'node:child_process';
import { chmodSync, createReadStream, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import { LocalNode, type LocalNodeOptions } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { mountAt } from '../../src/controllers/csi-driver/mounts';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import {
  DataVolumeType,
  PersistentVolumeClaimType,
  PersistentVolumeType,
  PodType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import {
  VolumeSnapshotContentType,
  VolumeSnapshotType,
} from '../../src/controllers/runtime/storage-resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER, bootDiskPath, SerialConsole } from '../support/guest';
import { waitFor } from './node-harness';

/** The namespace the fixture's objects live in. */
export const NS = 'default';

/** A running local mode with storage and the image server; see the module comment. */
export interface LocalStorageFixture {
  node: LocalNode;
  state: string;
  /** The image server's base URL (`<url>/boot.qcow2`). */
  url: string;
  /** Paths the image server was asked for. */
  /** `METHOD path [range]` of each request the image server answered. */
  served: string[];
  /** The volume ids in the pool (`<pool>/volumes`). */
  poolVolumes(): string[];
  /** The snapshot ids in the pool. */
  poolSnapshots(): string[];
  /** The path of a pool volume's backing file. */
  volumeFile(id: string): string;
  /** A VM whose one disk is the DataVolume `<vm>-root` its template imports from the server. */
  dvVm(vmName: string, volumeMode?: 'Block'): KubeObject;
  /** The DataVolume Succeeded (a failed or retried import throws at once). */
  succeeded(dv: string): Promise<DataVolume & KubeObject>;
  /** Waits for the VM's launcher and its guest's boot (once); runs `fn` on its console. */
  onConsole<T>(vmName: string, fn: (con: SerialConsole) => Promise<T>): Promise<T>;
  /** Sets the VM's runStrategy (virtctl start/stop); stopping waits for its pods to go. */
  setRunning(vmName: string, running: boolean): Promise<void>;
  /** Waits until no pod, claim, PV, VolumeSnapshot or content is left and the pool is empty. */
  nothingLeft(): Promise<void>;
  /** Stops local mode (killing launchers a failed run left) and removes the state. */
  stop(vmNames: string[]): Promise<void>;
}

/** Starts local mode on a new state directory and the image server. */
export async function startLocalStorage(
  prefix: string,
  o: { podNetwork?: LocalNodeOptions['podNetwork'] } = {},
): Promise<LocalStorageFixture> {
  const state = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(state, 0o755);
  const served: string[] = [];
  // As a web server would: HEAD, and ranges advertised (the importer streams through nbdkit).
  const server: Server = createServer((req, res) => {
    served.push(`${req.method} ${req.url}${req.headers.range ? ` ${req.headers.range}` : ''}`);
    if (req.url !== '/boot.qcow2') {
      res.writeHead(404).end();
      return;
    }
    const size = statSync(bootDiskPath).size;
    const r = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (!r) {
      res.writeHead(200, { 'content-length': size, 'accept-ranges': 'bytes' });
      if (req.method === 'HEAD') res.end();
      else createReadStream(bootDiskPath).pipe(res);
      return;
    }
    const from = Number(r[1]);
    const to = r[2] ? Math.min(Number(r[2]), size - 1) : size - 1;
    res.writeHead(206, {
      'content-length': to - from + 1,
      'content-range': `bytes ${from}-${to}/${size}`,
      'accept-ranges': 'bytes',
    });
    createReadStream(bootDiskPath, { start: from, end: to }).pipe(res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const node = new LocalNode({
    paths: statePaths(state),
    podNetwork: o.podNetwork ?? false,
    log: process.env.KUBEVIRT_TS_NODE_LOG ? (c, m) => console.log(`${c}: ${m}`) : undefined,
  });
  await node.start();
  const pool = join(statePaths(state).csi, 'pool');

  const dvVm = (vmName: string, volumeMode?: 'Block') =>
    ({
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: vmName, namespace: NS },
      spec: {
        runStrategy: 'Always',
        dataVolumeTemplates: [
          {
            metadata: { name: `${vmName}-root` },
            spec: {
              source: { http: { url: `${url}/boot.qcow2` } },
              storage: {
                ...(volumeMode ? { volumeMode } : {}),
                resources: { requests: { storage: '64Mi' } },
              },
            },
          },
        ],
        template: {
          spec: {
            terminationGracePeriodSeconds: 0,
            domain: {
              devices: {
                autoattachGraphicsDevice: false,
                autoattachPodInterface: false,
                disks: [{ name: 'root', disk: { bus: 'virtio' } }],
              },
              resources: { requests: { memory: '128Mi' } },
            },
            volumes: [{ name: 'root', dataVolume: { name: `${vmName}-root` } }],
          },
        },
      },
    }) as KubeObject;

  const succeeded = (dv: string) =>
    waitFor(
      `DataVolume ${dv} Succeeded`,
      async () => {
        const d = await node.store
          .get<DataVolume & KubeObject>(DataVolumeType, dv, NS)
          .catch(() => undefined);
        if (d?.status?.phase === 'Failed' || (d?.status?.restartCount ?? 0) > 0)
          throw new Error(`DataVolume import failed: ${JSON.stringify(d?.status)}`);
        return d?.status?.phase === 'Succeeded' && d;
      },
      300_000,
    );

  const onConsole = async <T>(vmName: string, fn: (con: SerialConsole) => Promise<T>): Promise<T> => {
    const pod = await waitFor(
      `the launcher pod of ${vmName} running`,
      async () => {
        const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: NS });
        return pods.items.find(
          (p) =>
            p.metadata?.name?.startsWith(`virt-launcher-${vmName}`) &&
            p.status?.phase === 'Running' &&
            !p.metadata?.deletionTimestamp,
        );
      },
      180_000,
    );
    const sockets = podEmptyDirPath(statePaths(state).pods, pod.metadata?.uid ?? '', 'sockets');
    const con = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 120_000);
    try {
      await con.waitFor(BOOT_MARKER, 240_000);
      const out = await fn(con);
      expect(con.output.split(BOOT_MARKER).length).toBe(2);
      return out;
    } finally {
      con.close();
    }
  };

  const setRunning = async (vmName: string, running: boolean) => {
    const vm = await node.store.get<KubeObject & { spec: { runStrategy?: string } }>(
      VirtualMachineType,
      vmName,
      NS,
    );
    await node.store.update(VirtualMachineType, {
      ...vm,
      spec: { ...vm.spec, runStrategy: running ? 'Always' : 'Halted' },
    });
    if (!running)
      await waitFor(
        `${vmName} stopped`,
        async () =>
          !(await node.store.list(PodType, { namespace: NS })).items.some((p) =>
            p.metadata?.name?.startsWith(`virt-launcher-${vmName}`),
          ),
        120_000,
      );
  };

  const poolVolumes = () => readdirSync(join(pool, 'volumes'));
  const poolSnapshots = () => readdirSync(join(pool, 'snapshots'));
  const nothingLeft = async () => {
    await waitFor(
      'claims, volumes, snapshots and the pool empty',
      async () => {
        const left = [
          ...(await node.store.list(PodType, { namespace: NS })).items,
          ...(await node.store.list(PersistentVolumeClaimType, { namespace: NS })).items,
          ...(await node.store.list(PersistentVolumeType)).items,
          ...(await node.store.list(VolumeSnapshotType, { namespace: NS })).items,
          ...(await node.store.list(VolumeSnapshotContentType)).items,
        ];
        return left.length === 0 && poolVolumes().length === 0 && poolSnapshots().length === 0;
      },
      180_000,
    );
  };

  const stop = async (vmNames: string[]) => {
    for (const vm of vmNames)
      await node.store.delete(VirtualMachineType, vm, { namespace: NS }).catch(() => undefined);
    const gone = await waitFor(
      'pods and volumes to go',
      async () =>
        (await node.store.list(PodType, { namespace: NS })).items.length === 0 &&
        (await node.store.list(PersistentVolumeType)).items.length === 0,
      120_000,
    ).catch(() => false);
    // Guests outlive local mode: a failed run must not leave its launchers behind.
    if (!gone) node.runtime.killAll();
    await node.stop();
    server.close();
    const bridge = o.podNetwork ? o.podNetwork.bridge : undefined;
    if (bridge) {
      try {
        execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
      } catch {}
    }
    // Stopped with no volume left: the pool is unmounted, so removing the state is safe.
    expect(await mountAt(pool)).toBeUndefined();
    if (!(await mountAt(pool))) rmSync(state, { recursive: true, force: true });
  };

  return {
    node,
    state,
    url,
    served,
    poolVolumes,
    poolSnapshots,
    nothingLeft,
    volumeFile: (id) => join(pool, 'volumes', id, 'disk'),
    dvVm,
    succeeded,
    onConsole,
    setRunning,
    stop,
  };
}
