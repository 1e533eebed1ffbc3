/**
 * `kubevirt-ts virt-certs [--namespace kubevirt] [--once] [--kubeconfig FILE]`: the
 * certificates of an install without virt-operator (the plain manifests' `virt-certs`
 * Deployment). Each pass writes upstream's certificate Secrets and CA bundle and patches
 * the bundle into virt-api's APIService and webhooks (virt-operator/cert-keeper.ts); it
 * passes again when a renewal falls due, after a failure, or every `--resync` seconds.
 */
import type { Command } from 'commander';

interface CertFlags {
  kubeconfig?: string;
  namespace: string;
  once?: boolean;
  resync: string;
}

/** Registers `virt-certs` on the program. */
export function registerVirtCertsCommand(program: Command): void {
  program
    .command('virt-certs')
    .description("keep KubeVirt's certificates and virt-api's CA bundles without virt-operator")
    .option('--kubeconfig <file>', 'kubeconfig of the API server (default: the usual lookup)')
    .option('--namespace <ns>', "KubeVirt's namespace", 'kubevirt')
    .option('--once', 'one pass, then exit')
    .option('--resync <seconds>', 'longest wait between passes', '300')
    .action(async (f: CertFlags) => {
      const resync = Number(f.resync);
      if (!Number.isInteger(resync) || resync < 1)
        throw new Error(`--resync: ${JSON.stringify(f.resync)} is not a positive number of seconds`);
      const { KubeClient } = await import('../../controllers/runtime/kube/client');
      const { keepCertificates } = await import('../../controllers/virt-operator/cert-keeper');
      const client = KubeClient.fromKubeconfig(f.kubeconfig);
      const log = (m: string) => console.log(JSON.stringify({ component: 'virt-certs', msg: m }));
      let stop = false;
      let wake: (() => void) | undefined;
      for (const sig of ['SIGTERM', 'SIGINT'] as const)
        process.once(sig, () => {
          stop = true;
          wake?.();
        });
      while (!stop) {
        let waitMs = resync * 1000;
        try {
          const r = await keepCertificates(client, f.namespace, new Date());
          if (r.renewed.length) log(`renewed ${r.renewed.join(', ')}`);
          if (r.missing.length) log(`not there yet: ${r.missing.join(', ')}`);
          if (f.once) break;
          // Missing holders (virt-api's objects applied later) are looked for again soon.
          if (r.missing.length) waitMs = Math.min(waitMs, 10_000);
          waitMs = Math.max(1000, Math.min(waitMs, r.nextRenewal.getTime() - Date.now()));
        } catch (e) {
          log(`pass failed: ${(e as Error).message}`);
          if (f.once) {
            process.exitCode = 1;
            break;
          }
          waitMs = Math.min(waitMs, 10_000);
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, waitMs);
        });
      }
      client.close();
    });
}
