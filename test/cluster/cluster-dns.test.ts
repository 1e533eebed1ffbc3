/**
 * Cluster DNS on the real cluster (scripts/cluster/dns.ts): a pod on each of the two nodes
 * resolves a Service's name through glibc (`getent hosts`, the resolver Node.js programs
 * such as the CDI importer use), by the search list of its resolv.conf (the kubelet's
 * `clusterDNS` 10.96.0.10, kube-proxy DNATing it to CoreDNS on the first node's bridge
 * address) and by its full name; a name outside the cluster's zones does not resolve
 * (CoreDNS refuses it: no query leaves this machine).
 */
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { clusterUnavailableReason, sharedCluster } from '../support/cluster';
import { createTestNamespace } from '../support/cluster-namespace';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('cluster DNS', why === undefined, why ?? '');
const NS = 'cluster-dns';

/** What each pod prints: its resolv.conf, then one line per lookup (`<name> -> <answer or FAILED>`). */
const SCRIPT = `cat /etc/resolv.conf
look() { out=$(getent hosts "$1") && echo "$1 -> $out" || echo "$1 -> FAILED"; }
look named
look named.${NS}.svc
look kubernetes.default.svc.cluster.local
look kube-dns.kube-system.svc.cluster.local
look kubevirt-ts-outside.example.com
echo done`;

describe.skipIf(!enabled)('cluster DNS (CoreDNS behind kube-dns) on both nodes', () => {
  let info: ClusterInfo;
  let core: CoreV1Api;

  beforeAll(async () => {
    info = await sharedCluster({ nodes: 2 });
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    await createTestNamespace(core, NS);
  }, 300_000);

  afterAll(async () => {
    await core?.deleteNamespace({ name: NS }).catch(() => undefined);
  });

  const pod = (name: string, nodeName: string): V1Pod => ({
    metadata: { name },
    spec: {
      nodeName,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'main',
          image: info.images['virt-launcher'],
          imagePullPolicy: 'Never',
          command: ['sh', '-c', SCRIPT],
        },
      ],
    },
  });

  it('resolves a Service by its short and full names from pods on node 1 and node 2; nothing outside', {
    timeout: 240_000,
  }, async () => {
    // A Service with no endpoints still has its ClusterIP and its A record.
    const svc = await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'named' }, spec: { selector: { app: 'none' }, ports: [{ port: 80 }] } },
    });
    const ip = svc.spec?.clusterIP ?? '';
    expect(ip).toMatch(/^10\.96\.0\.\d+$/);
    const nodes = [info.nodeName, info.extraNodes?.[0]?.nodeName ?? ''];
    expect(nodes[1]).not.toBe('');
    for (const [i, node] of nodes.entries())
      await core.createNamespacedPod({ namespace: NS, body: pod(`dns-${i + 1}`, node) });
    for (const [i] of nodes.entries()) {
      const name = `dns-${i + 1}`;
      const done = await waitFor(
        `pod ${name} done`,
        async () => {
          const p = await core.readNamespacedPod({ name, namespace: NS });
          return p.status?.phase === 'Succeeded' || p.status?.phase === 'Failed' ? p : undefined;
        },
        120_000,
        250,
      );
      const log = await core.readNamespacedPodLog({ name, namespace: NS });
      expect(done.status?.phase, log).toBe('Succeeded');
      expect(log).toMatch(/^nameserver 10\.96\.0\.10$/m);
      expect(log).toMatch(
        new RegExp(`^search ${NS}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local`, 'm'),
      );
      const fqdn = `named.${NS}.svc.cluster.local`;
      expect(log).toContain(`named -> ${ip}`);
      expect(log).toMatch(new RegExp(`^named -> ${ip.replace(/\./g, '\\.')}\\s+${fqdn}$`, 'm'));
      expect(log).toMatch(new RegExp(`^named\\.${NS}\\.svc -> ${ip.replace(/\./g, '\\.')}\\s+${fqdn}$`, 'm'));
      expect(log).toMatch(/^kubernetes\.default\.svc\.cluster\.local -> 10\.96\.0\.1\s/m);
      expect(log).toMatch(/^kube-dns\.kube-system\.svc\.cluster\.local -> 10\.96\.0\.10\s/m);
      expect(log).toContain('kubevirt-ts-outside.example.com -> FAILED');
      expect(log).toMatch(/^done$/m);
    }
  });
});
