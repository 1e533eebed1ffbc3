/**
 * What the one-node cluster writes for containerd, the kubelet and CNI, and the checks on
 * its user-given names (they reach `ip`, certificates and file paths). No root needed.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeContainerdConfig } from '../../scripts/cluster/containerd';
import { SERVICE_CIDR, writeKubeProxyConfig } from '../../scripts/cluster/kube-proxy';
import { checkMaxPods, checkNodeName, writeKubeletConfig } from '../../scripts/cluster/kubelet';
import { multusBin, prepareCniBinDir, writeMultusConfig } from '../../scripts/cluster/multus';
import { bridgeAddress, checkBridgeName, writeCniConfig } from '../../scripts/cluster/network';
import { podAddressCount } from '../../scripts/cluster/node-network';
import { clusterPaths } from '../../scripts/cluster/state';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'kvts-cluster-config-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('cluster configuration files', () => {
  it('containerd: the CRI settings these hosts need, everything under the state dir', () => {
    const paths = clusterPaths(tmp());
    const toml = readFileSync(
      writeContainerdConfig(paths, 'localhost/kubevirt-ts/pause:0123456789abcdef'),
      'utf8',
    );
    expect(toml).toContain(`root = "${paths.containerd}/root"`);
    expect(toml).toContain(`state = "${paths.containerd}/state"`);
    expect(toml).toContain(`address = "${paths.containerd}/containerd.sock"`);
    expect(toml).toMatch(/^oom_score = 0$/m);
    expect(toml).toMatch(/^ {2}restrict_oom_score_adj = true$/m);
    expect(toml).toMatch(/^ {8}SystemdCgroup = false$/m);
    expect(toml).toContain('sandbox_image = "localhost/kubevirt-ts/pause:0123456789abcdef"');
    expect(toml).toContain(`conf_dir = "${paths.cni}/net.d"`);
    // The cluster's own plugin directory: links to Debian's plugins (and multus).
    expect(toml).toContain(`bin_dir = "${paths.cni}/bin"`);
  });

  it('kubelet: cgroupfs, cgroup v1 allowed, oomScoreAdj 0, image GC off, webhook auth, off the firewall', () => {
    const paths = clusterPaths(tmp());
    const config = JSON.parse(readFileSync(writeKubeletConfig(paths, '/pki/ca.crt', '192.0.2.2'), 'utf8'));
    expect(config).toMatchObject({
      kind: 'KubeletConfiguration',
      address: '192.0.2.2',
      cgroupDriver: 'cgroupfs',
      failCgroupV1: false,
      oomScoreAdj: 0,
      imageGCHighThresholdPercent: 100,
      containerRuntimeEndpoint: `unix://${paths.containerd}/containerd.sock`,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: '/pki/ca.crt' },
      },
      authorization: { mode: 'Webhook' },
      readOnlyPort: 0,
      // Else the kubelet adds iptables(-nft) tables and chains to the host (KUBE-FIREWALL,
      // KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT) that nothing removes.
      makeIPTablesUtilChains: false,
      // Pods resolve Service names through the kube-dns Service (scripts/cluster/dns.ts).
      clusterDNS: ['10.96.0.10'],
      clusterDomain: 'cluster.local',
    });
  });

  it('kubelet: maxPods only when asked, within the pod addresses of the node', () => {
    const paths = clusterPaths(tmp());
    const plain = JSON.parse(readFileSync(writeKubeletConfig(paths, '/pki/ca.crt', '192.0.2.2'), 'utf8'));
    expect(plain).not.toHaveProperty('maxPods');
    const raised = JSON.parse(
      readFileSync(writeKubeletConfig(paths, '/pki/ca.crt', '192.0.2.2', { maxPods: 250 }), 'utf8'),
    );
    expect(raised.maxPods).toBe(250);
    expect(podAddressCount('10.245.0.0/24', 1, 1)).toBe(253);
    expect(podAddressCount('10.245.0.0/24', 1, 2)).toBe(126);
    expect(podAddressCount('10.245.0.0/24', 2, 2)).toBe(126);
    expect(() => checkMaxPods(253, 253)).not.toThrow();
    expect(() => checkMaxPods(254, 253)).toThrow('maxPods 254: expected a whole number from 1 to 253');
    expect(() => checkMaxPods(0, 253)).toThrow('maxPods 0');
    expect(() => checkMaxPods(1.5, 253)).toThrow('maxPods 1.5');
  });

  it('CNI: the bridge plugin with host-local IPAM, no gateway, no masquerading', () => {
    const dir = tmp();
    const file = writeCniConfig(dir, 'kvts-br0', '10.244.0.0/24');
    expect(file).toBe(join(dir, 'net.d', '10-kubevirt-ts.conflist'));
    const conf = JSON.parse(readFileSync(file, 'utf8'));
    expect(conf.plugins).toEqual([
      {
        type: 'bridge',
        bridge: 'kvts-br0',
        isGateway: false,
        ipMasq: false,
        hairpinMode: true,
        ipam: { type: 'host-local', subnet: '10.244.0.0/24', dataDir: join(dir, 'ipam') },
      },
    ]);
  });

  it('CNI with Services: pods route the service range through their node', () => {
    const dir = tmp();
    const file = writeCniConfig(dir, 'kvts-br0', '10.244.0.0/24', undefined, {
      dst: SERVICE_CIDR,
      gw: '10.244.0.1',
    });
    const conf = JSON.parse(readFileSync(file, 'utf8'));
    expect(conf.plugins[0].ipam.routes).toEqual([{ dst: '10.96.0.0/24', gw: '10.244.0.1' }]);
  });

  it('kube-proxy: nftables mode, every Service masqueraded, conntrack and NodePorts kept local', () => {
    const paths = clusterPaths(tmp());
    const file = writeKubeProxyConfig(paths, {
      kubeconfig: '/k/proxy.kubeconfig',
      nodeName: 'n1',
      podSubnet: '10.244.0.0/24',
      bridgeAddress: '10.244.0.1',
    });
    expect(file).toBe(join(paths.root, 'kube-proxy', 'kube-proxy.yaml'));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      kind: 'KubeProxyConfiguration',
      mode: 'nftables',
      clientConnection: { kubeconfig: '/k/proxy.kubeconfig' },
      hostnameOverride: 'n1',
      clusterCIDR: '10.244.0.0/24',
      nodePortAddresses: ['10.244.0.1/32'],
      nftables: { masqueradeAll: true },
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
      oomScoreAdj: 0,
    });
  });

  it('Multus: 00-multus.conf sorts first and delegates the cluster network to the bridge list', () => {
    const dir = tmp();
    const list = writeCniConfig(dir, 'kvts-br0', '10.244.0.0/24');
    const file = writeMultusConfig(dir, '/cp/admin.kubeconfig', list);
    expect(readdirSync(join(dir, 'net.d')).sort()[0]).toBe('00-multus.conf');
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      cniVersion: '0.4.0',
      name: 'multus-cni-network',
      type: 'multus',
      kubeconfig: '/cp/admin.kubeconfig',
      clusterNetwork: list,
      binDir: join(dir, 'bin'),
      cniDir: join(dir, 'multus'),
      confDir: join(dir, 'multus.d'),
      logFile: join(dir, 'multus.log'),
      logLevel: 'verbose',
    });
  });

  it('the CNI binary directory links every Debian plugin, and multus when it is built', () => {
    const dir = tmp();
    const multus = prepareCniBinDir(dir);
    expect(multus).toBe(existsSync(multusBin()));
    const names = readdirSync(join(dir, 'bin'));
    for (const p of ['bridge', 'host-local', 'loopback'])
      expect(readlinkSync(join(dir, 'bin', p))).toBe(join('/usr/lib/cni', p));
    expect(names.includes('multus')).toBe(multus);
  });

  it('rejects subnets, bridge and node names it cannot use safely', () => {
    expect(bridgeAddress('10.244.0.0/24')).toBe('10.244.0.1/24');
    expect(() => bridgeAddress('10.244.0.0/16')).toThrow('pod subnet "10.244.0.0/16": expected an IPv4 /24');
    expect(() => bridgeAddress('10.300.0.0/24')).toThrow('pod subnet "10.300.0.0/24"');
    expect(() => checkBridgeName('br0; rm -rf /')).toThrow('bridge name "br0; rm -rf /"');
    expect(() => checkBridgeName('a-name-longer-than-15')).toThrow('at most 15 characters');
    expect(() => checkNodeName('Node_1')).toThrow('node name "Node_1": must be a DNS-1123 label');
    expect(() => checkNodeName('node-1')).not.toThrow();
  });
});
