/**
 * Starts the test control plane (etcd, kube-apiserver, kube-controller-manager,
 * kube-scheduler) on loopback for debugging, prints its kubeconfig path, and stops it on
 * Ctrl-C / SIGTERM. Usage: npx tsx scripts/kube/start.ts [--keep]
 * (--keep leaves the working directory with certificates and logs behind). Builds the
 * Kubernetes binaries first when they are missing (scripts/setup-host.sh --with-kube,
 * the same step the test command runs; it returns at once when they are cached).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { available, startControlPlane } from '../../test/support/kube';

if (!available()) {
  execFileSync(fileURLToPath(new URL('../setup-host.sh', import.meta.url)), ['--with-kube'], {
    stdio: 'inherit',
  });
}

const keepDir = process.argv.includes('--keep');
const t0 = performance.now();
const cp = await startControlPlane({ keepDir });
console.log(`control plane ready in ${Math.round(performance.now() - t0)} ms`);
console.log(`server:     ${cp.server}`);
console.log(`kubeconfig: ${cp.kubeconfigPath}`);
console.log(`logs:       ${cp.dir}/logs`);
console.log('Ctrl-C stops it.');
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await cp.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);
