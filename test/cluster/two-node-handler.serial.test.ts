/**
 * virt-handler on both nodes of `up --nodes 2`: the components installed from the rendered
 * manifests (test/support/cluster-install.ts), the DaemonSet runs a handler pod per node.
 * In the default rendering (upstream's: on the pod network, not the host's) the handler on
 * node 2 reaches the API server through the `kubernetes` Service's ClusterIP, which node
 * 2's own kube-proxy forwards (scripts/cluster/kube-proxy.ts), registers its device plugins with node 2's own kubelet (its own device-plugin
 * directory) and labels node 2 schedulable. Serial: its own cluster up and down.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { down } from '../../scripts/cluster/down';
import { leftovers } from '../../scripts/cluster/host-cleanup';
import { up } from '../../scripts/cluster/up';
import { clusterUnavailableReason, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../support/cluster';
import { installComponents } from '../support/cluster-install';
import { kubectlWith } from '../support/cluster-pods';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('two-node cluster', why === undefined, why ?? '');
const log = (l: string) => process.stderr.write(`[cluster] ${l}\n`);

describe.skipIf(!enabled)('virt-handler on two nodes', () => {
  it('runs a Ready handler on each node; node 2 gets its device plugins and the schedulable label; Services answer on both', async () => {
    const stateDir = testStateDir();
    const info = await up({ stateDir, bridge: TEST_BRIDGE, podSubnet: TEST_POD_SUBNET, nodes: 2, log });
    const dir = mkdtempSync(join(tmpdir(), 'kvts-two-node-handler-'));
    try {
      const node2 = info.extraNodes?.[0]?.nodeName;
      if (!node2) throw new Error('no second node');
      const kubectl = kubectlWith(info.kubeconfigPath);
      const kc = new KubeConfig();
      kc.loadFromFile(info.kubeconfigPath);
      const core = kc.makeApiClient(CoreV1Api);
      const t0 = performance.now();
      installComponents(info, dir, kubectl);
      const handlers = await waitFor(
        'a Ready virt-handler on each node',
        async () => {
          const pods = (
            await core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: 'kubevirt.io=virt-handler' })
          ).items;
          const ready = (p: V1Pod) =>
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
          const byNode = new Map(pods.filter(ready).map((p) => [p.spec?.nodeName, p]));
          return byNode.has(info.nodeName) && byNode.has(node2) ? byNode : undefined;
        },
        240_000,
        1_000,
      );
      process.stderr.write(
        `[two-node] virt-handler Ready on both nodes ${Math.round(performance.now() - t0)} ms after the install\n`,
      );
      expect(handlers.get(node2)?.spec?.hostNetwork ?? false).toBe(false);
      // A pod address from node 2's share of the pod subnet.
      const ip = handlers.get(node2)?.status?.podIP ?? '';
      expect(Number(ip.split('.')[3])).toBeGreaterThanOrEqual(128);
      for (const name of [info.nodeName, node2]) {
        const node = await waitFor(
          `devices.kubevirt.io/kvm on ${name}`,
          async () => {
            const n = await core.readNode({ name });
            return n.status?.capacity?.['devices.kubevirt.io/kvm'] === '1k' &&
              n.metadata?.labels?.['kubevirt.io/schedulable'] === 'true'
              ? n
              : undefined;
          },
          120_000,
          1_000,
        );
        expect(node.status?.capacity?.['devices.kubevirt.io/tun']).toBe('1k');
      }
      // Node 2's handler logs through node 2's kubelet.
      const logs = kubectl(
        'logs',
        '-n',
        'kubevirt',
        handlers.get(node2)?.metadata?.name ?? '',
        '-c',
        'virt-handler',
      );
      expect(logs).toContain(node2);

      // Services as on a user's cluster: virt-api's ClusterIP answers a pod on each node
      // (each node's own kube-proxy DNATs it to the virt-api pod, on node 1's segment).
      const clusterIP = kubectl(
        'get',
        'svc',
        '-n',
        'kubevirt',
        'virt-api',
        '-o',
        'jsonpath={.spec.clusterIP}',
      );
      expect(clusterIP).toMatch(/^10\.96\.0\.\d+$/);
      const probe = `require('https').get({host:'${clusterIP}',port:443,path:'/apis/subresources.kubevirt.io/v1/healthz',rejectUnauthorized:false},r=>{console.log('virt-api '+r.statusCode);process.exit(0)}).on('error',e=>{console.log('error '+e.message);process.exit(1)})`;
      for (const [i, name] of [info.nodeName, node2].entries()) {
        const pod = `svc-probe-${i + 1}`;
        kubectl(
          'run',
          pod,
          '--image=localhost/kubevirt-ts/kubevirt-ts:latest',
          '--image-pull-policy=Never',
          '--restart=Never',
          `--overrides=${JSON.stringify({ spec: { nodeName: name } })}`,
          '--command',
          '--',
          'node',
          '-e',
          probe,
        );
        const phase = await waitFor(
          `${pod} finished`,
          async () => {
            const p = await core.readNamespacedPod({ name: pod, namespace: 'default' });
            return ['Succeeded', 'Failed'].includes(p.status?.phase ?? '') ? p.status?.phase : undefined;
          },
          90_000,
          500,
        );
        const out = kubectl('logs', pod).trim();
        process.stderr.write(`[two-node] ${name}: pod -> ${clusterIP}:443: ${out}\n`);
        expect(out).toBe('virt-api 200');
        expect(phase).toBe('Succeeded');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
      expect(left).toEqual([]);
    }
    expect(leftovers(stateDir, TEST_BRIDGE)).toEqual([]);
  }, 600_000);
});
