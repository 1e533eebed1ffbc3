/**
 * A real Prometheus (Debian's /usr/bin/prometheus) for tests: started on a free loopback
 * port with a temporary config scraping the given targets every second (over HTTPS
 * verified against a CA when asked), queried through its HTTP API, stopped and its data
 * removed afterwards. (Debian's build has no Kubernetes service discovery: tests resolve
 * the targets themselves.)
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port';
import { waitFor } from './wait';

export const PROMETHEUS = '/usr/bin/prometheus';
export const PROMTOOL = '/usr/bin/promtool';

/** Why Prometheus cannot run here, or undefined. */
export function prometheusBlocker(): string | undefined {
  return existsSync(PROMETHEUS)
    ? undefined
    : `${PROMETHEUS} is missing: scripts/setup-host.sh --with-kube installs it`;
}

/** One instant-query result series. */
export interface PromSeries {
  metric: Record<string, string>;
  value: number;
}

/** One scrape job: host:port targets, and for HTTPS the CA to verify them with and the name they present. */
export interface PromJob {
  name: string;
  targets: string[];
  scheme: 'http' | 'https';
  tls?: { caFile: string; serverName: string };
}

/** A running Prometheus. */
export class TestPrometheus {
  private constructor(
    readonly url: string,
    private readonly proc: ChildProcess,
    private readonly dir: string,
  ) {}

  /** Starts Prometheus scraping `targets` (job name -> base URL of a /metrics server). */
  static start(targets: Record<string, string>): Promise<TestPrometheus> {
    return TestPrometheus.startJobs(
      Object.entries(targets).map(([name, url]) => {
        const u = new URL(url);
        return { name, targets: [u.host], scheme: u.protocol === 'https:' ? 'https' : 'http' };
      }),
    );
  }

  /** Starts Prometheus scraping `jobs` every second. */
  static async startJobs(list: PromJob[]): Promise<TestPrometheus> {
    const dir = mkdtempSync(join(tmpdir(), 'kvts-prom-'));
    const q = (v: string) => JSON.stringify(v);
    const jobs = list
      .map((j) => {
        const tls = j.tls
          ? `    tls_config:\n      ca_file: ${q(j.tls.caFile)}\n      server_name: ${q(j.tls.serverName)}\n`
          : '';
        return `  - job_name: ${q(j.name)}\n    scheme: ${j.scheme}\n${tls}    static_configs:\n      - targets: [${j.targets.map(q).join(', ')}]\n`;
      })
      .join('');
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n${jobs}`,
    );
    const port = await freePort();
    const proc = spawn(
      PROMETHEUS,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    proc.stderr?.on('data', (d) => {
      stderr += String(d);
    });
    const p = new TestPrometheus(`http://127.0.0.1:${port}`, proc, dir);
    await waitFor(
      `Prometheus ready on port ${port} (${stderr.slice(-300)})`,
      async () => {
        if (proc.exitCode !== null)
          throw new Error(`prometheus exited ${proc.exitCode}: ${stderr.slice(-1000)}`);
        return (await fetch(`${p.url}/-/ready`).catch(() => undefined))?.ok;
      },
      60_000,
      200,
    );
    return p;
  }

  /** An instant PromQL query. */
  async query(q: string): Promise<PromSeries[]> {
    const res = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as {
      status: string;
      error?: string;
      data: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success') throw new Error(`query ${q}: ${body.error}`);
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  }

  /** The health of each scrape target (job -> "up"/"down", last error). */
  async targets(): Promise<{ job: string; health: string; lastError: string }[]> {
    const res = await fetch(`${this.url}/api/v1/targets`);
    const body = (await res.json()) as {
      data: { activeTargets: { labels: { job: string }; health: string; lastError: string }[] };
    };
    return body.data.activeTargets.map((t) => ({
      job: t.labels.job,
      health: t.health,
      lastError: t.lastError,
    }));
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode === null) {
      const exited = new Promise((r) => this.proc.once('exit', r));
      this.proc.kill('SIGTERM');
      await exited;
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
