/**
 * `npm run bench:operator-cluster` (root; the npm script takes /tmp/kvts-cluster.lock, the
 * machine's one-kubelet lock): the real one-node cluster brought up in the tests' state
 * directory, then the upstream install: `kubectl apply` of the operator manifest (rendered
 * for this cluster) and of a KubeVirt CR with `useEmulation: true`, timed until
 * `kubectl wait kv kubevirt --for condition=Available` returns (every component pod from
 * the images, with the operator's certificates, Ready). The cluster goes down at the end.
 * Ends with `BENCH operator-cluster install_to_available_ms= cluster_up_ms= load1=`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { down } from '../scripts/cluster/down';
import { up } from '../scripts/cluster/up';
import { devOperatorManifest, kubectl } from '../test/cluster/operator-cluster';
import {
  clusterUnavailableReason,
  TEST_BRIDGE,
  TEST_POD_SUBNET,
  testStateDir,
} from '../test/support/cluster';

const why = clusterUnavailableReason();
if (why) throw new Error(`bench:operator-cluster: ${why}`);
const log = (line: string) => process.stderr.write(`[cluster] ${line}\n`);
const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-operator-'));
const stateDir = testStateDir();
let t = performance.now();
const info = await up({ stateDir, bridge: TEST_BRIDGE, podSubnet: TEST_POD_SUBNET, log });
const upMs = performance.now() - t;
try {
  writeFileSync(join(dir, 'operator.yaml'), devOperatorManifest(info));
  writeFileSync(
    join(dir, 'kubevirt.yaml'),
    stringify({
      apiVersion: 'kubevirt.io/v1',
      kind: 'KubeVirt',
      metadata: { name: 'kubevirt', namespace: 'kubevirt' },
      spec: { configuration: { developerConfiguration: { useEmulation: true } } },
    }),
  );
  const load = loadavg()[0];
  t = performance.now();
  kubectl(info, 'apply', '-f', join(dir, 'operator.yaml'));
  kubectl(info, 'wait', '--for', 'condition=Established', '--timeout=60s', 'crd/kubevirts.kubevirt.io');
  kubectl(info, 'apply', '-f', join(dir, 'kubevirt.yaml'));
  kubectl(info, 'wait', '-n', 'kubevirt', 'kv', 'kubevirt', '--for', 'condition=Available', '--timeout=600s');
  const installMs = performance.now() - t;
  console.log(
    `BENCH operator-cluster install_to_available_ms=${Math.round(installMs)} cluster_up_ms=${Math.round(upMs)} load1=${load.toFixed(2)}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
  const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
  if (left.length) {
    process.stderr.write(`the cluster left behind:\n  ${left.join('\n  ')}\n`);
    process.exitCode = 1;
  }
}
