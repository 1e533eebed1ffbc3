/**
 * Issue 17 on the real one-node cluster (real kubelet and containerd): kubevirt-ts
 * installed the upstream way, `kubectl apply` of the operator manifest and then of a
 * KubeVirt CR; the operator deploys virt-api (with the certificates it makes),
 * virt-controller and virt-handler, the webhooks and the APIService, which the real API
 * server calls; the tiny guest boots from its containerDisk example and `virtctl console`
 * reads it through virt-api; drift is repaired, configuration reaches the components
 * without a restart, an invalid configuration is refused with its field path, an image
 * tag upgrade replaces every component pod with the guest running, and removal is refused
 * while a VMI exists and then leaves only the operator.
 *
 * Serial, with its own cluster (up here, down at the end): test/cluster/vm-tiny.test.ts
 * installs the same component names from the plain manifests into the parallel run's
 * shared cluster, and one kubelet runs per machine, so this file runs in the serial pass
 * (one file at a time, after the shared cluster is gone; lifecycle.serial.test.ts brings
 * its own up and down too, never at the same time).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ctr } from '../../scripts/cluster/containerd';
import { down } from '../../scripts/cluster/down';
import { type ClusterInfo, clusterPaths } from '../../scripts/cluster/state';
import { up } from '../../scripts/cluster/up';
import { repoRoot } from '../../scripts/gen-api';
import { clusterUnavailableReason, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../support/cluster';
import { patchKubeVirtArgs } from '../support/cluster-pods';
import { waitForCrdEstablished } from '../support/crd-established';
import { BOOT_MARKER } from '../support/guest';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';
import {
  admissionProbe,
  apiRequest,
  apiserverPeers,
  condition,
  consoleAnswers,
  devOperatorManifest,
  getJson,
  isReady,
  type KubeVirtCR,
  kubectl,
  kubectlResult,
  type PodInfo,
  podsByComponent,
  secretCertFingerprint,
  secretPair,
  servedFingerprint,
} from './operator-cluster';
import { COMPONENTS, KV_NS, removeWithWorkloadBlock, upgradeImageTag, VM } from './operator-lifecycle-cases';
import { storageStackReady, vmWithClaimDisks } from './storage-pvc-case';
import { uiClusterEnabled, webConsoleOnCluster } from './ui-cluster-case';

const why = clusterUnavailableReason();
const enabled = integration('one-node cluster', why === undefined, why ?? '');
/** The second tag the upgrade moves to: the same images, tagged again in containerd. */
const NEXT_TAG = 'operator-test-next';

describe.skipIf(!enabled)('virt-operator on the real one-node cluster', () => {
  let info: ClusterInfo;
  let dir: string;
  let qemuPid: number;
  let firstCerts: { api: string; handler: string } | undefined;
  const k = (...args: string[]) => kubectl(info, ...args);
  const kv = () => getJson<KubeVirtCR>(info, 'kv', 'kubevirt', '-n', KV_NS);
  const ready = (c: string) => (podsByComponent(info, KV_NS).get(c) ?? []).filter(isReady);
  const log = (line: string) => process.stderr.write(`[operator-cluster] ${line}\n`);
  const cases = () => ({ info, log });

  beforeAll(async () => {
    info = await up({ stateDir: testStateDir(), bridge: TEST_BRIDGE, podSubnet: TEST_POD_SUBNET, log });
    dir = mkdtempSync(join(tmpdir(), 'kvts-operator-'));
  }, 300_000);

  afterAll(async () => {
    rmSync(dir ?? '/nonexistent', { recursive: true, force: true });
    if (!info) return;
    const paths = clusterPaths(info.stateDir);
    for (const name of ['kubevirt-ts', 'virt-launcher'])
      try {
        ctr(paths, ['images', 'remove', `localhost/kubevirt-ts/${name}:${NEXT_TAG}`]);
      } catch {
        // Not tagged (the upgrade test did not get that far).
      }
    const left = await down({ stateDir: info.stateDir, bridge: TEST_BRIDGE, log });
    expect(left).toEqual([]);
  }, 300_000);

  it('installs from the operator manifest and a KubeVirt CR: Deployed and Available', async () => {
    writeFileSync(join(dir, 'operator.yaml'), devOperatorManifest(info));
    writeFileSync(
      join(dir, 'kubevirt.yaml'),
      stringify({
        apiVersion: 'kubevirt.io/v1',
        kind: 'KubeVirt',
        metadata: { name: 'kubevirt', namespace: KV_NS },
        spec: {
          uninstallStrategy: 'BlockUninstallIfWorkloadsExist',
          // Short-lived server certificates: renewed 90 s after they are made, so during
          // this run (the CA stays; its rotation is tested on the private API server).
          certificateRotateStrategy: {
            selfSigned: {
              ca: { duration: '24h', renewBefore: '12h' },
              server: { duration: '4m', renewBefore: '150s' },
            },
          },
          // TCG guests: KVM is unusable for a guest on these machines (docs/cluster.md).
          configuration: { developerConfiguration: { useEmulation: true } },
        },
      }),
    );
    const t0 = performance.now();
    k('apply', '-f', join(dir, 'operator.yaml'));
    await waitForCrdEstablished(k, 'kubevirts.kubevirt.io');
    k('apply', '-f', join(dir, 'kubevirt.yaml'));
    k('wait', '-n', KV_NS, 'kv', 'kubevirt', '--for', 'condition=Available', '--timeout=400s');
    log(`operator manifest applied to KubeVirt Available: ${Math.round(performance.now() - t0)} ms`);

    const cr = kv();
    expect(cr.status?.phase).toBe('Deployed');
    expect(condition(cr, 'Available')).toMatchObject({ status: 'True', reason: 'AllComponentsReady' });
    expect(condition(cr, 'Degraded')?.status).toBe('False');
    expect(cr.status?.observedKubeVirtVersion).toBe('latest');
    const pods = podsByComponent(info, KV_NS);
    expect(pods.get('virt-operator')).toHaveLength(2);
    expect(pods.get('virt-api')?.filter(isReady)).toHaveLength(1);
    expect(pods.get('virt-controller')).toHaveLength(2);
    expect(pods.get('virt-handler')?.filter(isReady)).toHaveLength(1);
    expect(pods.get('virt-exportproxy')?.filter(isReady)).toHaveLength(1);
    // virt-api: a containerd container of the kubelet, on the node's own address.
    const api = pods.get('virt-api')?.[0] as PodInfo;
    expect(api.status.containerStatuses?.[0]?.containerID).toMatch(/^containerd:\/\//);
    expect(api.status.podIP).toBe(info.nodeIP);
    // Its serving certificate is the operator's, signed by the operator's CA.
    const secret = getJson<{ data: Record<string, string> }>(
      info,
      'secret',
      'kubevirt-virt-api-certs',
      '-n',
      KV_NS,
    );
    expect(Object.keys(secret.data).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    firstCerts = {
      api: secretCertFingerprint(info, KV_NS, 'kubevirt-virt-api-certs'),
      handler: secretCertFingerprint(info, KV_NS, 'kubevirt-virt-handler-server-certs'),
    };
  }, 600_000);

  it('the real API server reaches virt-api at an address of this machine: APIService Available, webhooks called', () => {
    const svc = getJson<{ spec: { clusterIP: string } }>(info, 'service', 'virt-api', '-n', KV_NS);
    // The real-node service range (test/support/kube-components.ts), which the cluster routes
    // onto its pod bridge: a ClusterIP never leaves the machine.
    expect(svc.spec.clusterIP).toMatch(/^10\.96\.0\.\d+$/);
    const slices = getJson<{ items: Array<{ endpoints?: Array<{ addresses: string[] }> }> }>(
      info,
      'endpointslices',
      '-n',
      KV_NS,
      '-l',
      'kubernetes.io/service-name=virt-api',
    );
    expect(slices.items.flatMap((s) => s.endpoints ?? []).flatMap((e) => e.addresses)).toEqual([info.nodeIP]);
    const apiService = getJson<KubeVirtCR>(info, 'apiservice', 'v1.subresources.kubevirt.io');
    expect(condition(apiService, 'Available')?.status).toBe('True');
    const discovery = JSON.parse(k('get', '--raw', '/apis/subresources.kubevirt.io/v1')) as {
      resources: Array<{ name: string }>;
    };
    expect(discovery.resources.map((r) => r.name)).toContain('virtualmachineinstances/console');

    // The mutating webhook defaults the VM as the real API server stores it.
    k('apply', '-f', join(repoRoot, 'examples', 'vm-tiny-containerdisk.yaml'));
    const vm = getJson<{ spec: { template: { spec: { domain: { machine?: { type?: string } } } } } }>(
      info,
      'vm',
      VM,
      '-n',
      'default',
    );
    expect(vm.spec.template.spec.domain.machine?.type).toBe('q35');
    // Every connection of the API server goes to this machine: loopback, the node's own
    // address (kubelet, virt-api, virt-handler on the host network) or the pod bridge.
    const subnet = TEST_POD_SUBNET.replace(/\.0\/24$/, '.');
    const peers = apiserverPeers(info);
    expect(peers).toContain(info.nodeIP);
    for (const p of peers)
      expect(p === info.nodeIP || p.startsWith('127.') || p.startsWith(subnet), p).toBe(true);
  }, 120_000);

  it('boots the tiny guest; virtctl console through virt-api shows its boot marker and runs a command', async () => {
    await waitFor(
      'VMI Running',
      () =>
        kubectlResult(info, ['get', 'vmi', VM, '-n', 'default']).code === 0 &&
        getJson<KubeVirtCR>(info, 'vmi', VM, '-n', 'default').status?.phase === 'Running',
      300_000,
      1_000,
    );
    expect(await consoleAnswers(info, VM, { expr: '6*7', tag: 'X', bootMarker: BOOT_MARKER })).toBe(42);
    const pids = execFileSync('pgrep', ['-f', `guest=default_${VM},`], { encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(pids).toHaveLength(1);
    qemuPid = Number(pids[0]);
  }, 600_000);

  it.runIf(uiClusterEnabled())(
    'the web console with --kubeconfig: the VM listed Running, a command typed in its serial console runs, pause and unpause through virt-api',
    async () => {
      await webConsoleOnCluster(cases(), VM, 'default');
    },
    240_000,
  );

  it('brings up the storage stack: the CSI node pod registered with the kubelet, snapshot-controller, CSIDriver and classes', async () => {
    await storageStackReady(cases());
  }, 300_000);

  it('a VM with a blank filesystem claim and a block claim of kubevirt-ts-local keeps what its guest wrote across stop and start', async () => {
    await vmWithClaimDisks(cases());
  }, 900_000);

  it('restores a deleted virt-api Deployment and a deleted webhook configuration', async () => {
    const oldDeploy = getJson<{ metadata: { uid: string } }>(info, 'deployment', 'virt-api', '-n', KV_NS);
    const oldHook = getJson<{ metadata: { uid: string } }>(
      info,
      'validatingwebhookconfiguration',
      'virt-api-validator',
    );
    k('delete', 'deployment', 'virt-api', '-n', KV_NS, '--wait=false');
    k('delete', 'validatingwebhookconfiguration', 'virt-api-validator');
    await waitFor(
      'virt-api-validator re-created',
      () => {
        const r = kubectlResult(info, ['get', 'validatingwebhookconfiguration', 'virt-api-validator']);
        return (
          r.code === 0 &&
          getJson<{ metadata: { uid: string } }>(info, 'validatingwebhookconfiguration', 'virt-api-validator')
            .metadata.uid !== oldHook.metadata.uid
        );
      },
      30_000,
      500,
    );
    await waitFor(
      'a new virt-api Deployment with a Ready pod',
      () => {
        const r = kubectlResult(info, ['get', 'deployment', 'virt-api', '-n', KV_NS]);
        if (r.code !== 0) return false;
        const d = getJson<{ metadata: { uid: string } }>(info, 'deployment', 'virt-api', '-n', KV_NS);
        return d.metadata.uid !== oldDeploy.metadata.uid && ready('virt-api').length === 1;
      },
      180_000,
      1_000,
    );
    k('wait', '-n', KV_NS, 'kv', 'kubevirt', '--for', 'condition=Available', '--timeout=120s');
  }, 300_000);

  it('refuses an invalid spec.configuration through the validating webhook, naming the field', async () => {
    const before = kv();
    const patch = { spec: { configuration: { developerConfiguration: { memoryOvercommit: -5 } } } };
    const r = kubectlResult(info, patchKubeVirtArgs(patch));
    expect(r.code).not.toBe(0);
    // kubectl prints the refusal's causes, with the field path.
    expect(r.err).toContain(
      'The request is invalid: spec.configuration.developerConfiguration.memoryOvercommit: Invalid value: -5: must be greater than 0',
    );
    // The API server's answer says who refused it: virt-api's webhook (the CRD's schema has no such rule).
    const status = await apiRequest(
      info,
      'PUT',
      `/apis/kubevirt.io/v1/namespaces/${KV_NS}/kubevirts/kubevirt`,
      {
        ...before,
        spec: {
          ...before.spec,
          configuration: { developerConfiguration: { useEmulation: true, memoryOvercommit: -5 } },
        },
      },
    );
    expect(status.code).toBe(422);
    expect(status.body.message).toContain(
      'admission webhook "kubevirt-validator.kubevirt.io" denied the request',
    );
    expect(status.body.details?.causes).toContainEqual({
      reason: 'FieldValueInvalid',
      field: 'spec.configuration.developerConfiguration.memoryOvercommit',
      message: 'Invalid value: -5: must be greater than 0',
    });
    expect(kv().metadata.generation).toBe(before.metadata.generation);
  });

  it('a developerConfiguration change reaches virt-api without a restart', async () => {
    const vmi = (name: string) =>
      stringify({
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstance',
        metadata: { name, namespace: 'default' },
        spec: {
          domain: {
            devices: { disks: [{ name: 'host', disk: { bus: 'virtio' } }] },
            resources: { requests: { memory: '64Mi' } },
          },
          volumes: [
            {
              name: 'host',
              hostDisk: { path: '/var/tmp/kvts-op.img', type: 'DiskOrCreate', capacity: '1Mi' },
            },
          ],
        },
      });
    const dryRun = (name: string) =>
      kubectlResult(info, ['create', '--dry-run=server', '-f', '-'], vmi(name));
    const refused = dryRun('hostdisk-a');
    expect(refused.code).not.toBe(0);
    expect(refused.err).toContain('HostDisk feature gate is not enabled');
    const before = new Map(
      COMPONENTS.map((c) => [
        c,
        ready(c)
          .map((p) => p.metadata.uid)
          .sort(),
      ]),
    );
    k(
      ...patchKubeVirtArgs({
        spec: {
          configuration: { developerConfiguration: { useEmulation: true, featureGates: ['HostDisk'] } },
        },
      }),
    );
    await waitFor('the HostDisk gate seen by virt-api', () => dryRun('hostdisk-b').code === 0, 60_000, 500);
    // No pod was replaced or restarted for it.
    for (const c of COMPONENTS) {
      expect(
        ready(c)
          .map((p) => p.metadata.uid)
          .sort(),
        c,
      ).toEqual(before.get(c));
      for (const p of ready(c))
        for (const s of p.status.containerStatuses ?? []) expect(s.restartCount, c).toBe(0);
    }
  }, 120_000);

  it('renews the short-lived server certificates: virt-api and virt-handler serve the new ones, no admission fails meanwhile', async () => {
    expect(firstCerts, 'the install test ran').toBeDefined();
    const vmi = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'rotation-probe', namespace: 'default' },
      spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
    };
    let codes: number[] = [];
    // Admission calls (mutating and validating webhooks, server-side dry run) all along.
    const probe = admissionProbe(info, vmi);
    try {
      const handlerClient = () => secretPair(info, KV_NS, 'kubevirt-virt-handler-certs');
      // A renewal after this test began, whatever the earlier tests took (renewals come
      // every 90 s): served certificates other than those in the Secrets and served now
      // (the kubelet's Secret volume update can lag one renewal).
      const apiSecret = () => secretCertFingerprint(info, KV_NS, 'kubevirt-virt-api-certs');
      const handlerSecret = () => secretCertFingerprint(info, KV_NS, 'kubevirt-virt-handler-server-certs');
      const servedApi = () => servedFingerprint(info.nodeIP, 8443);
      const servedHandler = () => servedFingerprint(info.nodeIP, 8186, handlerClient());
      const old = {
        api: [firstCerts?.api, apiSecret(), await servedApi()],
        handler: [firstCerts?.handler, handlerSecret(), await servedHandler()],
      };
      await waitFor(
        'virt-api and virt-handler serving renewed certificates',
        async () => !old.api.includes(await servedApi()) && !old.handler.includes(await servedHandler()),
        300_000,
        2_000,
      );
    } finally {
      codes = await probe.stop();
    }
    log(`admission calls through the rotation: ${codes.length}, answers ${[...new Set(codes)].join(',')}`);
    expect(codes.length).toBeGreaterThan(10);
    expect(codes.filter((c) => c !== 201)).toEqual([]);
    // The handler's new certificate carries virt-api's connection to the guest's console.
    expect(await consoleAnswers(info, VM, { expr: '5*9', tag: 'Z' })).toBe(45);
  }, 400_000);

  it('upgrades to another image tag with the guest running: every component pod replaced, same QEMU', async () => {
    expect(qemuPid, 'the boot test ran').toBeGreaterThan(0);
    await upgradeImageTag(cases(), NEXT_TAG, qemuPid);
  }, 600_000);

  it('removal: refused while a VMI exists (BlockUninstallIfWorkloadsExist), then only the operator remains', async () => {
    await removeWithWorkloadBlock(cases());
  }, 600_000);
});
