/** The operator's pure parts: durations, certificate planning and rotation, spec checks, readiness, status. */
import { describe, expect, it } from 'vitest';
import type { KubeVirt } from '../../../src/api/generated/types';
import { certDurations } from '../../../src/controllers/virt-operator/cert-config';
import { planCertificates } from '../../../src/controllers/virt-operator/cert-rotation';
import { certInfo, signedBy, splitBundle } from '../../../src/controllers/virt-operator/certificates';
import { defaultInstallOptions } from '../../../src/controllers/virt-operator/components/install-options';
import { virtHandlerArgs } from '../../../src/controllers/virt-operator/components/virt-handler';
import { parseDuration } from '../../../src/controllers/virt-operator/duration';
import { checkKubeVirt } from '../../../src/controllers/virt-operator/kubevirt-spec';
import { withInstallOverlays } from '../../../src/controllers/virt-operator/overlays';
import { withPlacement } from '../../../src/controllers/virt-operator/placement';
import { notReadyReason } from '../../../src/controllers/virt-operator/readiness';
import { nextStatus } from '../../../src/controllers/virt-operator/status';

const H = 3_600_000;
const images = { registry: 'localhost/kubevirt-ts', tag: 'latest', pullPolicy: 'IfNotPresent' as const };

describe('durations', () => {
  it('parses Go durations and names the field of a bad one', () => {
    expect(parseDuration('1h30m', 'x')).toBe(1.5 * H);
    expect(parseDuration('90s', 'x')).toBe(90_000);
    expect(parseDuration('0', 'x')).toBe(0);
    expect(() => parseDuration('2 days', 'spec.a')).toThrow('spec.a: "2 days" is not a duration');
  });

  it('takes ca/server durations with upstream defaults (7 days, 1 day, renew 20% before)', () => {
    expect(certDurations(undefined)).toEqual({
      caDuration: 168 * H,
      caRenewBefore: 168 * H * 0.2,
      serverDuration: 24 * H,
      serverRenewBefore: 24 * H * 0.2,
    });
    const d = certDurations({
      certificateRotateStrategy: {
        selfSigned: {
          ca: { duration: '2h', renewBefore: '1h' },
          server: { duration: '1h', renewBefore: '30m' },
        },
      },
    });
    expect(d).toEqual({ caDuration: 2 * H, caRenewBefore: H, serverDuration: H, serverRenewBefore: 0.5 * H });
    expect(() =>
      certDurations({
        certificateRotateStrategy: { selfSigned: { ca: { duration: '1h', renewBefore: '2h' } } },
      }),
    ).toThrow('spec.certificateRotateStrategy.selfSigned.ca.renewBefore: must be shorter than ca.duration');
  });
});

describe('certificate planning', () => {
  const d = { caDuration: 2 * H, caRenewBefore: H, serverDuration: H, serverRenewBefore: 0.5 * H };
  const t0 = new Date('2026-01-01T00:00:00Z');

  it('creates a CA and leaves signed by it, and keeps them while none is due', async () => {
    const p = await planCertificates('kubevirt', { leaves: {} }, d, t0);
    expect(p.renewed).toEqual([
      'kubevirt-ca',
      'kubevirt-virt-api-certs',
      'kubevirt-virt-handler-certs',
      'kubevirt-virt-handler-server-certs',
      'kubevirt-controller-certs',
      'cdi-uploadproxy-server-cert',
      'cdi-uploadserver-client-cert',
      'kubevirt-ts-upload-token-signer',
      'kubevirt-exportproxy-certs',
    ]);
    expect(certInfo(p.state.leaves['kubevirt-virt-api-certs']!.cert).dnsNames).toContain(
      'virt-api.kubevirt.svc',
    );
    for (const l of Object.values(p.state.leaves)) expect(await signedBy(l.cert, p.state.ca.cert)).toBe(true);
    // The earliest renewal: the leaves, 30 min before their 1 h end.
    expect(p.nextRenewal.getTime() - t0.getTime()).toBe(0.5 * H);
    const again = await planCertificates('kubevirt', p.state, d, new Date(t0.getTime() + 10 * 60_000));
    expect(again.renewed).toEqual([]);
    expect(again.state.ca.cert).toBe(p.state.ca.cert);
  });

  it('renews leaves when due, and the CA with the old one kept in the bundle until it expires', async () => {
    const p = await planCertificates('kubevirt', { leaves: {} }, d, t0);
    const leaves = await planCertificates('kubevirt', p.state, d, new Date(t0.getTime() + 0.6 * H));
    expect(leaves.renewed).toEqual([
      'kubevirt-virt-api-certs',
      'kubevirt-virt-handler-certs',
      'kubevirt-virt-handler-server-certs',
      'kubevirt-controller-certs',
      'cdi-uploadproxy-server-cert',
      'cdi-uploadserver-client-cert',
      'kubevirt-ts-upload-token-signer',
      'kubevirt-exportproxy-certs',
    ]);
    const ca = await planCertificates('kubevirt', leaves.state, d, new Date(t0.getTime() + 1.1 * H));
    expect(ca.renewed[0]).toBe('kubevirt-ca');
    const bundle = splitBundle(ca.state.bundle);
    expect(bundle.map((c) => c.trim())).toEqual([ca.state.ca.cert.trim(), p.state.ca.cert.trim()]);
    for (const l of Object.values(ca.state.leaves))
      expect(await signedBy(l.cert, ca.state.ca.cert)).toBe(true);
    // Past the old CA's end, the bundle drops it.
    const later = await planCertificates('kubevirt', ca.state, d, new Date(t0.getTime() + 2.1 * H));
    expect(splitBundle(later.state.bundle).map((c) => c.trim())).not.toContain(p.state.ca.cert.trim());
  });
});

describe('KubeVirt spec checks', () => {
  const kv = (spec: KubeVirt['spec']): KubeVirt => ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'KubeVirt',
    metadata: { name: 'kubevirt', namespace: 'kubevirt' },
    spec,
  });

  it('takes image settings and placement', () => {
    const r = checkKubeVirt(
      kv({ imageTag: 'v2', imageRegistry: 'registry.example/kv', imagePullPolicy: 'Always' }),
      images,
    );
    expect(r.errors).toEqual([]);
    expect(r.spec).toMatchObject({
      tag: 'v2',
      registry: 'registry.example/kv',
      pullPolicy: 'Always',
      uninstallStrategy: '',
    });
  });

  it('refuses unsupported fields, bad tags and strategies by field', () => {
    const r = checkKubeVirt(
      kv({ customizeComponents: {}, imageTag: 'v 2', uninstallStrategy: 'Whatever', infra: { replicas: 0 } }),
      images,
    );
    expect(r.spec).toBeUndefined();
    expect(r.errors).toEqual([
      "spec.customizeComponents: not supported by kubevirt-ts's virt-operator",
      'spec.imageTag: "v 2" is not an image tag',
      'spec.uninstallStrategy: "Whatever" is not RemoveWorkloads or BlockUninstallIfWorkloadsExist',
      'spec.infra.replicas: 0 is not a whole number >= 1',
    ]);
  });

  it('takes workloadUpdateStrategy (virt-controller acts on it); refuses unknown methods and bad batches by field', () => {
    const ok = {
      workloadUpdateMethods: ['LiveMigrate', 'Evict'],
      batchEvictionSize: 3,
      batchEvictionInterval: '90s',
    };
    expect(checkKubeVirt(kv({ workloadUpdateStrategy: ok }), images).errors).toEqual([]);
    const bad = {
      workloadUpdateMethods: ['LiveMigrate', 'Restart', 'LiveMigrate'],
      batchEvictionSize: 0,
      batchEvictionInterval: 'soon',
    };
    expect(checkKubeVirt(kv({ workloadUpdateStrategy: bad }), images).errors).toEqual([
      'spec.workloadUpdateStrategy.workloadUpdateMethods[1]: "Restart" is not LiveMigrate or Evict',
      'spec.workloadUpdateStrategy.workloadUpdateMethods[2]: LiveMigrate is listed twice',
      'spec.workloadUpdateStrategy.batchEvictionSize: 0 is not a whole number >= 1',
      'spec.workloadUpdateStrategy.batchEvictionInterval: "soon" is not a duration such as "24h" or "1h30m"',
    ]);
  });

  it('passes virtualMachineInstancesPerNode to virt-handler as --max-devices, as upstream; refuses a bad count', () => {
    const r = checkKubeVirt(kv({ configuration: { virtualMachineInstancesPerNode: 12 } }), images);
    expect(r.errors).toEqual([]);
    expect(r.spec?.maxDevices).toBe(12);
    const args = (n?: number) =>
      virtHandlerArgs(defaultInstallOptions(n === undefined ? {} : { handlerMaxDevices: n }));
    expect(args(12).join(' ')).toContain('--max-devices 12');
    expect(args()).not.toContain('--max-devices');
    expect(
      checkKubeVirt(kv({ configuration: { virtualMachineInstancesPerNode: 0 } }), images).errors,
    ).toEqual([
      'spec.configuration.virtualMachineInstancesPerNode: 0 is not a whole number from 1 to 999999',
    ]);
  });

  it('validates spec.configuration with the admission rules virt-api uses', () => {
    const r = checkKubeVirt(kv({ configuration: { imagePullPolicy: 'Sometimes' as never } }), images);
    expect(r.spec).toBeUndefined();
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatch(/^spec\.configuration\.imagePullPolicy: /);
  });
});

describe('placement and readiness', () => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: 'virt-api',
      generation: 2,
      annotations: { 'kubevirt.io/install-strategy-version': 'v1' },
    },
    spec: { replicas: 2, template: { spec: { nodeSelector: { a: 'b' }, containers: [] } } },
  };

  it('lays spec.infra over Deployments and spec.workloads over DaemonSets', () => {
    const placed = withPlacement(
      deployment,
      {
        replicas: 3,
        nodePlacement: { nodeSelector: { infra: 'yes' }, tolerations: [{ key: 't', operator: 'Exists' }] },
      },
      { nodePlacement: { nodeSelector: { w: '1' } } },
    );
    expect(placed.spec).toMatchObject({
      replicas: 3,
      template: {
        spec: { nodeSelector: { a: 'b', infra: 'yes' }, tolerations: [{ key: 't', operator: 'Exists' }] },
      },
    });
    const ds = withPlacement(
      { ...deployment, kind: 'DaemonSet' },
      { nodePlacement: { nodeSelector: { infra: 'yes' } } },
      { nodePlacement: { nodeSelector: { w: '1' } } },
    );
    expect((ds.spec as { template: { spec: { nodeSelector: object } } }).template.spec.nodeSelector).toEqual({
      a: 'b',
      w: '1',
    });
  });

  it('sets the pull policy where a renderer left none, and the dev cluster fields on pods without host network', () => {
    const d = {
      ...deployment,
      spec: { template: { spec: { containers: [{ name: 'a' }, { name: 'b', imagePullPolicy: 'Always' }] } } },
    };
    const o = withInstallOverlays(
      d,
      defaultInstallOptions({ imagePullPolicy: 'Never', devCluster: { apiServerPort: 6443 } }),
    );
    const pod = (
      o.spec as {
        template: {
          spec: { hostNetwork?: boolean; containers: { imagePullPolicy: string; env: unknown[] }[] };
        };
      }
    ).template.spec;
    expect(pod.containers.map((c) => c.imagePullPolicy)).toEqual(['Never', 'Always']);
    expect(pod.hostNetwork).toBe(true);
    expect(pod.containers[0]!.env).toEqual([
      { name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' },
      { name: 'KUBERNETES_SERVICE_PORT', value: '6443' },
    ]);
  });

  it('a Deployment is ready at its version once rolled out with a ready replica', () => {
    expect(notReadyReason(deployment, 'v2')).toBe('Deployment virt-api (not yet at v2)');
    expect(notReadyReason({ ...deployment, status: { observedGeneration: 1 } }, 'v1')).toBe(
      'Deployment virt-api (rollout not observed)',
    );
    expect(
      notReadyReason({ ...deployment, status: { observedGeneration: 2, updatedReplicas: 1 } }, 'v1'),
    ).toBe('Deployment virt-api (1/2 updated)');
    expect(
      notReadyReason(
        { ...deployment, status: { observedGeneration: 2, updatedReplicas: 2, readyReplicas: 1 } },
        'v1',
      ),
    ).toBeUndefined();
  });
});

describe('status', () => {
  const t = new Date('2026-01-01T00:00:00Z');
  it('goes Deploying -> Deployed with upstream reasons, keeping transition times of unchanged conditions', () => {
    const s1 = nextStatus(
      undefined,
      {
        kind: 'deploying',
        version: 'v1',
        registry: 'r',
        generation: 1,
        notReady: ['Deployment virt-api (no ready replica)'],
        updating: false,
      },
      t,
    );
    expect(s1.phase).toBe('Deploying');
    expect(s1.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Available', 'False', 'DeploymentInProgress'],
      ['Progressing', 'True', 'DeploymentInProgress'],
      ['Degraded', 'False', 'DeploymentInProgress'],
    ]);
    const s2 = nextStatus(
      s1,
      { kind: 'deployed', version: 'v1', registry: 'r', generation: 1 },
      new Date(t.getTime() + 5000),
    );
    expect(s2).toMatchObject({
      phase: 'Deployed',
      observedKubeVirtVersion: 'v1',
      targetKubeVirtVersion: 'v1',
      observedGeneration: 1,
    });
    expect(s2.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Available', 'True', 'AllComponentsReady'],
      ['Progressing', 'False', 'AllComponentsReady'],
      ['Degraded', 'False', 'AllComponentsReady'],
    ]);
    // Degraded stayed False: its transition time is the first one.
    expect(s2.conditions?.[2]?.lastTransitionTime).toBe('2026-01-01T00:00:00Z');
    expect(s2.conditions?.[0]?.lastTransitionTime).toBe('2026-01-01T00:00:05Z');
  });

  it('a failed update stays Available on the old version and is Degraded with the reason', () => {
    const deployed = nextStatus(
      undefined,
      { kind: 'deployed', version: 'v1', registry: 'r', generation: 1 },
      t,
    );
    const f = nextStatus(
      deployed,
      { kind: 'failed', reason: 'DeploymentFailed', message: 'boom', generation: 2, version: 'v2' },
      t,
    );
    expect(f.conditions?.map((c) => [c.type, c.status])).toEqual([
      ['Available', 'True'],
      ['Progressing', 'False'],
      ['Degraded', 'True'],
    ]);
    expect(f).toMatchObject({ observedKubeVirtVersion: 'v1', targetKubeVirtVersion: 'v2' });
    const blocked = nextStatus(deployed, { kind: 'deleting', blocked: 'VMIs exist' }, t);
    expect(blocked.phase).toBe('Deleting');
    expect(blocked.conditions?.find((c) => c.type === 'Degraded')).toMatchObject({
      status: 'True',
      reason: 'DeletionFailed',
    });
  });
});
