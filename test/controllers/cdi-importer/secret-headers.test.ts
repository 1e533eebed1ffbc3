/** The importer reads a DataVolume's secretExtraHeaders as CDI's: one header line per key. */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { secretHeaderLines } from '../../../src/controllers/cdi-importer/secret-headers';

describe('secretHeaderLines', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const secret = (name: string, keys: Record<string, string>) => {
    mkdirSync(join(dir, name));
    // A Secret volume's layout: the keys beside its ..data link.
    mkdirSync(join(dir, name, '..2026_12_05'));
    symlinkSync('..2026_12_05', join(dir, name, '..data'));
    for (const [k, v] of Object.entries(keys)) writeFileSync(join(dir, name, k), v);
  };

  it('gives every key of every Secret as a header line, in name order, skipping the volume links', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-hdr-'));
    secret('secret1', { token: 'x-kubevirt-export-token:abc\n' });
    secret('secret0', { b: 'X-B: 2', a: 'X-A: 1' });
    expect(await secretHeaderLines(dir)).toEqual(['X-A: 1', 'X-B: 2', 'x-kubevirt-export-token:abc']);
  });

  it('refuses a value that is not one header line, naming the Secret and key', async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-hdr-'));
    secret('secret0', { evil: 'X-A: 1\r\nHost: elsewhere' });
    await expect(secretHeaderLines(dir)).rejects.toThrow(
      'secretExtraHeaders secret0/evil: the value is not one "Name: value" header line',
    );
  });
});
