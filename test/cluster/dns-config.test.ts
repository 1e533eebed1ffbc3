/**
 * What `cluster up` gives its cluster DNS (scripts/cluster/dns.ts): the Corefile (one
 * server block on the bridge address, the cluster's zones from the API, no forwarding),
 * the kube-dns Service and its manual EndpointSlice, and the build key, which must be the
 * one scripts/kube/build-coredns.sh computes (or `up` would look for another binary). No
 * root needed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CLUSTER_DNS_IP,
  COREDNS_USER,
  clusterDnsObjects,
  coreDnsBin,
  coreDnsKey,
  corefile,
} from '../../scripts/cluster/dns';
import { cacheDir } from '../support/integration';

/** The fields of clusterDnsObjects()'s objects this file reads. */
interface Obj {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { selector?: unknown };
  rules?: unknown[];
  subjects?: unknown[];
  ports?: Array<{ name: string; protocol: string }>;
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('cluster DNS configuration', () => {
  it('Corefile: cluster.local and reverse zones on the bridge address only, from the API, no forward', () => {
    const conf = corefile('10.245.0.1', '/state/coredns.kubeconfig');
    expect(conf).toMatch(/^cluster\.local:53 in-addr\.arpa:53 \{$/m);
    expect(conf).toMatch(/^ {4}bind 10\.245\.0\.1$/m);
    expect(conf).toMatch(/^ {4}kubernetes cluster\.local in-addr\.arpa \{$/m);
    expect(conf).toMatch(/^ {8}kubeconfig \/state\/coredns\.kubeconfig$/m);
    // No plugin that would send a query elsewhere: the built binary has none either.
    expect(conf).not.toMatch(/forward|proxy|grpc/);
    // Every directive is one the minimal build compiles (scripts/kube/coredns/main.go).
    const main = readFileSync(join('scripts', 'kube', 'coredns', 'main.go'), 'utf8');
    for (const d of ['bind', 'errors', 'cache', 'kubernetes']) {
      expect(conf).toMatch(new RegExp(`^ {4}${d}\\b`, 'm'));
      expect(main).toContain(`_ "github.com/coredns/coredns/plugin/${d}"`);
    }
  });

  it('the kube-dns Service at 10.96.0.10, its EndpointSlice naming the bridge address, RBAC for CoreDNS', () => {
    const [role, binding, service, slice] = clusterDnsObjects('10.245.0.1') as Obj[];
    expect(CLUSTER_DNS_IP).toBe('10.96.0.10');
    expect(role).toMatchObject({ kind: 'ClusterRole', metadata: { name: 'system:coredns' } });
    expect(role.rules).toContainEqual({
      apiGroups: ['discovery.k8s.io'],
      resources: ['endpointslices'],
      verbs: ['list', 'watch'],
    });
    expect(binding.subjects).toEqual([
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: COREDNS_USER },
    ]);
    expect(service).toMatchObject({
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system' },
      spec: {
        clusterIP: '10.96.0.10',
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
        ],
      },
    });
    // No selector: the EndpointSlice controller leaves the manual slice alone.
    expect(service.spec?.selector).toBeUndefined();
    expect(slice).toMatchObject({
      kind: 'EndpointSlice',
      metadata: { namespace: 'kube-system', labels: { 'kubernetes.io/service-name': 'kube-dns' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.245.0.1'], conditions: { ready: true } }],
    });
    expect(slice.metadata.labels?.['endpointslice.kubernetes.io/managed-by']).not.toBe(
      'endpointslice-controller.k8s.io',
    );
    expect(slice.ports?.map((p) => `${p.name}/${p.protocol}`)).toEqual(['dns/UDP', 'dns-tcp/TCP']);
  });

  it("the build key: go.mod's CoreDNS version and the sources' hash, as build-coredns.sh computes it", () => {
    const key = coreDnsKey();
    const version = /^require github\.com\/coredns\/coredns (v[0-9.]+)$/m.exec(
      readFileSync('scripts/kube/coredns/go.mod', 'utf8'),
    )?.[1];
    const shell = execFileSync('sh', ['-c', 'cat main.go go.mod go.sum | sha256sum | cut -c1-12'], {
      cwd: 'scripts/kube/coredns',
      encoding: 'utf8',
    }).trim();
    expect(key).toBe(`${version}-${shell}`);
    expect(coreDnsBin()).toBe(join(cacheDir, 'coredns', key, 'bin', 'coredns'));
    // A changed source is another key: a stale build is never used.
    const d = mkdtempSync(join(tmpdir(), 'kvts-coredns-key-'));
    dirs.push(d);
    for (const f of ['main.go', 'go.mod', 'go.sum'])
      writeFileSync(join(d, f), readFileSync(join('scripts/kube/coredns', f)));
    expect(coreDnsKey(d)).toBe(key);
    writeFileSync(join(d, 'main.go'), `${readFileSync(join(d, 'main.go'), 'utf8')}\n// changed\n`);
    expect(coreDnsKey(d)).not.toBe(key);
    expect(coreDnsKey(d)).toMatch(/^v1\.\d+\.\d+-[0-9a-f]{12}$/);
  });
});
