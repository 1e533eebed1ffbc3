/** User data reaching a terminal is escaped and cut: `up`'s admission errors and `validate`'s messages. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { validateFiles } from '../../src/cli/commands/validate';
import { loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { MAX_TERMINAL_LINE, terminalText } from '../../src/cli/terminal-text';

// biome-ignore lint/suspicious/noControlCharactersInRegex: the point is that none is left
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

describe('terminalText', () => {
  it('escapes control, escape-sequence, line-separator and bidi characters', () => {
    expect(terminalText('a\u001b[2Jb\rc\nd\u202ee\u2066f\u2028g')).toBe(
      'a\\u001b[2Jb\\u000dc\\u000ad\\u202ee\\u2066f\\u2028g',
    );
  });
  it('cuts long text and says how much was left out', () => {
    const out = terminalText('x'.repeat(1024 * 1024));
    expect(out).toBe(
      `${'x'.repeat(MAX_TERMINAL_LINE)}... (${1024 * 1024 - MAX_TERMINAL_LINE} more characters)`,
    );
  });
});

describe('CLI output of hostile manifests', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-term-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const hostileVmi = (name: string, label: string) => ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name, namespace: 'default' },
    spec: {
      domain: {
        devices: {},
        memory: { guest: '64Mi' },
        // Upstream's message quotes the feature name as written.
        cpu: { features: [{ name: label, policy: 'bogus' }] },
      },
    },
  });

  it('up: admission errors cannot forge lines, send escape sequences or run to a MiB', async () => {
    const f = join(dir, 'a.yaml');
    const forged = 'x\n✔ VirtualMachineInstance/evil started\u001b]0;owned\u0007\u202e';
    writeFileSync(f, stringify(hostileVmi('evil', `${forged}${'n'.repeat(1024 * 1024)}`)));
    const err = (await loadAndAdmit([f], new ImageStore(join(dir, 'images'))).catch((e) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    const lines = err.message.split('\n');
    for (const line of lines) {
      expect(line).not.toMatch(RAW);
      expect(line.length).toBeLessThan(MAX_TERMINAL_LINE + 100);
      expect(line.startsWith('✔')).toBe(false);
    }
  });

  it('validate: messages carry no raw bidi or control characters and are cut', async () => {
    const f = join(dir, 'b.yaml');
    writeFileSync(f, stringify(hostileVmi('evil', `evil\u202egnp.exe\u2066${'n'.repeat(5000)}`)));
    const r = await validateFiles([f]);
    expect(r.errors.length).toBeGreaterThan(0);
    for (const e of r.errors) {
      expect(e).not.toMatch(RAW);
      expect(e.length).toBeLessThan(MAX_TERMINAL_LINE + 100);
    }
  });
});
