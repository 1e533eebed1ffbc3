/**
 * `npm run bench`: runs every `bench:*` npm script one after another, collects the
 * `BENCH <name> key=value...` line each ends with, and rewrites docs/benchmarks.md with
 * a table of the figures and the machine they came from (hand-written notes after
 * {@link NOTES_MARKER} are kept). A benchmark that fails or prints
 * no BENCH line is listed as such (the run goes on) and makes the exit code non-zero.
 * `npm run bench -- converter runtime` runs only those.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  scripts: Record<string, string>;
};

/** docs/benchmarks.md from this line on is written by hand and kept by every run. */
export const NOTES_MARKER = '<!-- notes: kept by bench/run-all.ts -->';

interface Outcome {
  name: string;
  figures?: Array<[string, string]>;
  error?: string;
  seconds: number;
}

/** Parses `BENCH name k=v k=v` into its figures. */
export function parseBenchLine(line: string): { name: string; figures: Array<[string, string]> } | undefined {
  const m = /^BENCH (\S+)((?: \S+=\S+)*)\s*$/.exec(line.trim());
  if (!m) return undefined;
  const figures = (m[2] ?? '')
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i), kv.slice(i + 1)] as [string, string];
    });
  return { name: m[1] ?? '', figures };
}

function runScript(script: string): Promise<{ code: number; bench?: string; tail: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', script], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let bench: string | undefined;
    const onData = (c: Buffer) => {
      const s = c.toString('utf8');
      process.stdout.write(s);
      out = (out + s).slice(-20_000);
      for (const line of s.split('\n')) if (line.startsWith('BENCH ')) bench = line;
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (c: Buffer) => process.stderr.write(c));
    child.on('exit', (code) => {
      // A line may straddle chunks: look again in the kept output.
      const last = out
        .split('\n')
        .filter((l) => l.startsWith('BENCH '))
        .pop();
      resolve({ code: code ?? 1, bench: last ?? bench, tail: out.slice(-500) });
    });
  });
}

function machine(): string[] {
  const cpus = os.cpus();
  return [
    `- CPU: ${cpus[0]?.model ?? 'unknown'} (${cpus.length} cores)`,
    `- Memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- OS: ${os.type()} ${os.release()} (${os.arch()})`,
    `- Node: ${process.version}`,
    `- Date: ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}`,
  ];
}

async function main(): Promise<void> {
  const only = process.argv.slice(2);
  const scripts = Object.keys(pkg.scripts)
    .filter((s) => s.startsWith('bench:'))
    .filter((s) => only.length === 0 || only.includes(s.slice('bench:'.length)))
    .sort();
  const outcomes: Outcome[] = [];
  for (const s of scripts) {
    process.stderr.write(`\n=== ${s} ===\n`);
    const t0 = Date.now();
    const r = await runScript(s);
    const seconds = (Date.now() - t0) / 1000;
    const parsed = r.bench ? parseBenchLine(r.bench) : undefined;
    if (r.code !== 0 || !parsed) {
      outcomes.push({
        name: s.slice('bench:'.length),
        error: r.code !== 0 ? `exit code ${r.code}` : 'no BENCH line',
        seconds,
      });
    } else outcomes.push({ name: parsed.name, figures: parsed.figures, seconds });
  }
  const lines = [
    '# Benchmarks',
    '',
    'Written by `npm run bench` (bench/run-all.ts), which runs every `bench:*` script and',
    'collects the `BENCH` line each ends with. Re-run it to refresh this file; each',
    "benchmark's own source says what it measures and how.",
    '',
    '## Machine',
    '',
    ...machine(),
    '',
    '## Figures',
    '',
    '| benchmark | figure | value | run time |',
    '|---|---|---|---|',
  ];
  for (const o of outcomes) {
    if (o.error) {
      lines.push(`| ${o.name} | (failed) | ${o.error} | ${o.seconds.toFixed(0)} s |`);
      continue;
    }
    (o.figures ?? []).forEach(([k, v], i) => {
      lines.push(
        `| ${i === 0 ? o.name : ''} | ${k} | ${v} | ${i === 0 ? `${o.seconds.toFixed(0)} s` : ''} |`,
      );
    });
  }
  lines.push('');
  // Hand-written notes after the marker (what a figure means, runs by hand) are kept.
  const doc = path.join(root, 'docs', 'benchmarks.md');
  const old = existsSync(doc) ? readFileSync(doc, 'utf8') : '';
  const notes = old.indexOf(NOTES_MARKER);
  if (notes >= 0) lines.push(old.slice(notes).trimEnd(), '');
  if (only.length === 0) writeFileSync(doc, lines.join('\n'));
  else process.stdout.write(`${lines.join('\n')}\n(partial run: docs/benchmarks.md left unchanged)\n`);
  const failed = outcomes.filter((o) => o.error);
  process.stderr.write(
    `\n${outcomes.length - failed.length} of ${outcomes.length} benchmarks gave figures\n`,
  );
  if (failed.length > 0) process.exitCode = 1;
}

await main();
