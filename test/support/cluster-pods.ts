/**
 * Helpers of the tests on the real one-node cluster: kubectl, a plain pod from the
 * launcher image (Node and busybox in it) to talk to a guest from, and the host-side
 * view of a pod's containers.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { cacheDir } from './integration';
import { waitFor } from './wait';

export const kubectlBin = join(cacheDir, 'kube', 'current', 'bin', 'kubectl');

/**
 * kubectl with the cluster's kubeconfig; returns stdout. A failure names the command and
 * what it printed (a bare spawnSync ETIMEDOUT says neither, and CI keeps only that line).
 */
/** `kubectl` arguments merge-patching the KubeVirt CR (`kubevirt/kubevirt`) with `patch`. */
export const patchKubeVirtArgs = (patch: unknown): string[] => [
  'patch',
  'kv',
  'kubevirt',
  '-n',
  'kubevirt',
  '--type',
  'merge',
  '-p',
  JSON.stringify(patch),
];

export function kubectlWith(kubeconfig: string): (...args: string[]) => string {
  return (...args) => {
    try {
      return execFileSync(kubectlBin, ['--kubeconfig', kubeconfig, ...args], {
        encoding: 'utf8',
        timeout: 120_000,
      });
    } catch (e) {
      // The same error (callers read its stdout and status), its message made useful.
      const r = e as Error & { code?: string; status?: number | null; stdout?: string; stderr?: string };
      const printed = `${r.stdout ?? ''}${r.stderr ?? ''}`.trim().slice(-1500);
      r.message =
        `kubectl ${args.join(' ').slice(0, 300)}: ${r.code === 'ETIMEDOUT' ? 'no answer in 120 s' : `exit ${r.status}`}` +
        (printed ? `; printed: ${printed}` : '');
      throw r;
    }
  };
}

/** kubectl exec in the background, its output collected (for a connection held open). */
export function kubectlExecAsync(
  kubeconfig: string,
  namespace: string,
  pod: string,
  cmd: string[],
): { child: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const child = spawn(kubectlBin, ['--kubeconfig', kubeconfig, 'exec', '-n', namespace, pod, '--', ...cmd], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { child, out: () => out, exited };
}

/**
 * Creates pod `name` running `command` in the launcher image (root, no devices unless
 * `limits` asks a device plugin for some) and waits for it to run; resolves with it.
 */
export async function runPod(
  core: CoreV1Api,
  o: {
    namespace: string;
    name: string;
    image: string;
    command: string[];
    runAsUser?: number;
    limits?: Record<string, string>;
  },
): Promise<V1Pod> {
  await core.createNamespacedPod({
    namespace: o.namespace,
    body: {
      metadata: { name: o.name, labels: { app: o.name } },
      spec: {
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 1,
        enableServiceLinks: false,
        automountServiceAccountToken: false,
        containers: [
          {
            name: 'main',
            image: o.image,
            imagePullPolicy: 'Never',
            command: o.command,
            ...(o.limits ? { resources: { limits: o.limits } } : {}),
            ...(o.runAsUser !== undefined
              ? {
                  securityContext: {
                    runAsUser: o.runAsUser,
                    runAsGroup: o.runAsUser,
                    allowPrivilegeEscalation: false,
                    capabilities: { drop: ['ALL'] },
                  },
                }
              : {}),
          },
        ],
      },
    },
  });
  return waitFor(
    `pod ${o.namespace}/${o.name} running with an IP`,
    async () => {
      const p = await core.readNamespacedPod({ name: o.name, namespace: o.namespace });
      return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
    },
    120_000,
    500,
  );
}
