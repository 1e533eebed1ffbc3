/**
 * The handlers' migration roles through upstream's migration proxy (issue 26 step 2): the
 * target handler starts a mutual-TLS listener leading to its launcher's libvirt socket and
 * advertises its node address with `targetDirectMigrationNodePorts`; the source handler
 * makes the unix socket for it in the source pod's directory and gives the launcher
 * `qemu+unix:///session?socket=<that socket>`; a connection the source's driver opens
 * there reaches the target's libvirt socket through TLS; after the hand-over both
 * handlers' proxies are gone. Two handlers on the embedded store with fake hosts, as
 * handler-migration.test.ts (the fake driver cannot speak libvirt through the socket: it
 * checks the path end to end, then moves the guest to the fake target host).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import type { Pod } from '../../../src/controllers/common/pod';
import { VmiResource } from '../../../src/controllers/common/vmi-resource';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import {
  MigrationProxyManager,
  type MigrationTlsMaterial,
} from '../../../src/controllers/virt-handler/migration-proxy';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { FakeDriver, type MigrationSupport, registerFakeHost } from '../../../src/drivers';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';
import { waitFor } from '../../support/wait';
import { type FakeNode, podLauncher, startFakeNode } from './fake-node';

const NS = 'default';
const dir = mkdtempSync(join(tmpdir(), 'kvp-'));
let node: MigrationTlsMaterial;
let client: MigrationTlsMaterial;
/** Stands for the target launcher's libvirt daemon socket: answers upper-cased. */
let daemon: Server;
const daemonSock = join(dir, 'libvirt-sock');
const daemonSaw: string[] = [];

beforeAll(async () => {
  const ca: CertFiles = makeCa(dir, 'ca');
  const m = (c: CertFiles) => ({
    cert: readFileSync(c.cert),
    key: readFileSync(c.key),
    ca: readFileSync(ca.cert),
  });
  node = m(issue(dir, ca, 'node', 'kubevirt.io:system:node:virt-handler', ['IP:127.0.0.1']));
  client = m(issue(dir, ca, 'client', 'kubevirt.io:system:client:virt-handler'));
  daemon = createServer((s) =>
    s.on('data', (d) => {
      daemonSaw.push(d.toString());
      s.write(d.toString().toUpperCase());
    }),
  );
  await new Promise<void>((r) => daemon.listen(daemonSock, r));
});
afterAll(() => {
  daemon?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `text` on the unix socket at `path`; resolves with the reply. */
function ask(path: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path);
    let got = '';
    s.on('data', (d) => {
      got += d.toString();
      if (got.length >= text.length) {
        s.destroy();
        resolve(got);
      }
    });
    s.on('error', reject);
    s.write(text);
  });
}

describe('handler migration through the migration proxy (fake hosts)', () => {
  it('carries libvirt’s connection from the source pod to the target launcher over mutual TLS, then closes the proxies', async () => {
    const store = await EmbeddedStore.open();
    const managers = [0, 1].map(
      () =>
        new MigrationProxyManager({
          bindHost: '127.0.0.1',
          serverTls: () => node,
          clientTls: () => client,
          disableTls: () => false,
        }),
    );
    const sourceDirs = new Map<string, string>();
    const wiring = (i: number) => ({
      manager: managers[i],
      address: '127.0.0.1',
      targetSockets: () => [{ port: 0, unixPath: daemonSock }],
      sourceDir: (podUid: string) => {
        const d = join(dir, `s${i}`);
        sourceDirs.set(podUid, d);
        return d;
      },
      daemon: 'session' as const,
    });
    const nodes: FakeNode[] = [
      await startFakeNode(store, 'node1', { rootPrefix: 'kvts-hmp-', migrationProxy: wiring(0) }),
      await startFakeNode(store, 'node2', { rootPrefix: 'kvts-hmp-', migrationProxy: wiring(1) }),
    ];
    const [n1, n2] = nodes;
    const unregister = registerFakeHost('fake://node2', n2.host);
    const launchers: VirtLauncher[] = [];
    const seen: { targetUri: string; reply: string; wire: number }[] = [];
    try {
      const launcherPod = async (n: FakeNode, vmi: VirtualMachineInstance, name: string, labels = {}) => {
        const created = await store.create<Pod & KubeObject>(PodType, {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: {
            name,
            namespace: NS,
            labels: {
              'kubevirt.io': 'virt-launcher',
              'kubevirt.io/created-by': vmi.metadata?.uid ?? '',
              ...labels,
            },
            ownerReferences: [
              {
                apiVersion: 'kubevirt.io/v1',
                kind: 'VirtualMachineInstance',
                name: 'vm1',
                uid: vmi.metadata?.uid ?? '',
                controller: true,
              },
            ],
          },
          spec: { nodeName: n.name, containers: [{ name: 'compute', image: 'x' }] },
        } as Pod & KubeObject);
        const pod = await store.updateStatus<Pod & KubeObject>(PodType, {
          ...created,
          status: {
            phase: 'Running',
            containerStatuses: [{ name: 'compute', ready: true, state: { running: {} } }],
          },
        } as Pod & KubeObject);
        const driver = new FakeDriver({ host: n.host });
        const orig = driver.migration;
        (driver as { migration: MigrationSupport }).migration = {
          ...orig,
          // The source daemon's connection to the target: through the source socket.
          migrateSource: async (ref, targetUri, cookie, options) => {
            const socket = /[?&]socket=([^&]+)/.exec(targetUri)?.[1] ?? '';
            const reply = await ask(socket, 'virConnectOpen');
            seen.push({ targetUri, reply, wire: managers[1].openCount() });
            return orig.migrateSource(ref, 'fake://node2', cookie, options);
          },
        };
        const { launcher } = podLauncher(
          n,
          pod.metadata?.uid ?? '',
          { namespace: NS, name: 'vm1', uid: vmi.metadata?.uid ?? '' },
          () => driver,
          name,
        );
        await launcher.start();
        launchers.push(launcher);
        return pod;
      };
      const vmi0 = await store.create<VirtualMachineInstance & KubeObject>(VmiResource, {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstance',
        metadata: { name: 'vm1', namespace: NS, labels: { 'kubevirt.io/nodeName': 'node1' } },
        spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
        status: { phase: 'Scheduled', nodeName: 'node1' },
      } as VirtualMachineInstance & KubeObject);
      const src = await launcherPod(n1, vmi0, 'virt-launcher-vm1-src');
      await waitFor(
        'Running on node1',
        async () =>
          (await store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'vm1', NS)).status?.phase ===
          'Running',
      );
      const running = await store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'vm1', NS);
      await launcherPod(n2, running, 'virt-launcher-vm1-tgt', { 'kubevirt.io/migrationJobUID': 'mig-1' });
      const v = await store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'vm1', NS);
      await store.update(VmiResource, {
        ...v,
        metadata: {
          ...v.metadata,
          labels: { ...v.metadata?.labels, 'kubevirt.io/migrationTargetNodeName': 'node2' },
        },
        status: {
          ...v.status,
          migrationState: {
            migrationUid: 'mig-1',
            sourceNode: 'node1',
            targetNode: 'node2',
            targetPod: 'virt-launcher-vm1-tgt',
            mode: 'PreCopy',
          },
        },
      } as KubeObject);
      const moved = await waitFor('VMI on node2', async () => {
        const x = await store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'vm1', NS);
        return x.status?.nodeName === 'node2' ? x : undefined;
      });
      const ms = moved.status?.migrationState ?? {};
      expect(ms.targetNodeAddress).toBe('127.0.0.1');
      const ports = ms.targetDirectMigrationNodePorts ?? {};
      expect(Object.values(ports)).toEqual([0]);
      expect(Number(Object.keys(ports)[0])).toBeGreaterThan(0);
      const uid = moved.metadata?.uid ?? '';
      const srcSock = join(
        sourceDirs.get(src.metadata?.uid ?? '') ?? '',
        'migrationproxy',
        `${uid}-source.sock`,
      );
      expect(seen).toEqual([
        { targetUri: `qemu+unix:///session?socket=${srcSock}`, reply: 'VIRCONNECTOPEN', wire: 1 },
      ]);
      expect(daemonSaw).toContain('virConnectOpen');
      expect(n2.host.domains.get('default_vm1')?.boots).toBe(1);
      // Both sides let their proxies go once the migration completed.
      await waitFor('proxies closed', async () => managers[0].openCount() + managers[1].openCount() === 0);
    } finally {
      for (const n of nodes) await n.handler.stop();
      for (const l of launchers) await l.exit(0).catch(() => undefined);
      unregister();
      await Promise.all(managers.map((m) => m.shutdown()));
      for (const n of nodes) rmSync(n.root, { recursive: true, force: true });
    }
  });
});
