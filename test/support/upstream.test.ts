/** Where the upstream suites look for upstream's files, and the generators' error without them. */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { readSwagger } from '../../scripts/gen-api';
import { upstreamCandidate, upstreamDir } from './upstream';

const saved = process.env.KUBEVIRT_TS_UPSTREAM_DIR;
const tmp = mkdtempSync(path.join(tmpdir(), 'kubevirt-ts-upstream-'));

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

afterEach(() => {
  if (saved === undefined) delete process.env.KUBEVIRT_TS_UPSTREAM_DIR;
  else process.env.KUBEVIRT_TS_UPSTREAM_DIR = saved;
});

describe('upstreamDir', () => {
  it('takes KUBEVIRT_TS_UPSTREAM_DIR when it holds swagger.json and examples/', () => {
    const dir = path.join(tmp, 'complete');
    mkdirSync(path.join(dir, 'examples'), { recursive: true });
    writeFileSync(path.join(dir, 'swagger.json'), '{"definitions":{}}');
    process.env.KUBEVIRT_TS_UPSTREAM_DIR = dir;
    expect(upstreamCandidate()).toBe(dir);
    expect(upstreamDir()).toBe(dir);
  });

  it('is undefined when a piece is missing or the directory does not exist', () => {
    const dir = path.join(tmp, 'no-examples');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'swagger.json'), '{}');
    process.env.KUBEVIRT_TS_UPSTREAM_DIR = dir;
    expect(upstreamDir()).toBeUndefined();
    process.env.KUBEVIRT_TS_UPSTREAM_DIR = path.join(tmp, 'nowhere');
    expect(upstreamDir()).toBeUndefined();
  });

  it('falls back to ../shared/kubevirt next to the clone', () => {
    delete process.env.KUBEVIRT_TS_UPSTREAM_DIR;
    expect(upstreamCandidate()).toBe(path.resolve(import.meta.dirname, '../../../shared/kubevirt'));
  });
});

describe('readSwagger without the file', () => {
  it('says which file is missing and where to put it', () => {
    const missing = path.join(tmp, 'nowhere', 'swagger.json');
    expect(() => readSwagger(missing)).toThrow(
      `${missing}: no such file. The generators read upstream KubeVirt's swagger.json: pass its path, ` +
        'set KUBEVIRT_TS_UPSTREAM_DIR to a directory holding it, or place it at ../shared/kubevirt/swagger.json',
    );
  });

  it('reads the document when it is there', () => {
    const file = path.join(tmp, 'swagger.json');
    writeFileSync(file, '{"definitions":{"v1.Thing":{"type":"object"}}}');
    expect(readSwagger(file)).toEqual({ definitions: { 'v1.Thing': { type: 'object' } } });
  });
});
