/**
 * bench:ui — the web console in headless Chromium (Debian's /usr/bin/chromium, or
 * KUBEVIRT_TS_CHROMIUM) against its server on an in-memory store holding 1000 VMs (no
 * guests: the figures are the console's, not the hypervisor's). Measured, median of 5
 * fresh pages each:
 * - first_paint_ms: the list page's first contentful paint (Chromium's paint timing);
 * - list_1000_vms_render_ms: navigation start to the table showing all 1000 rows (page
 *   and bundle load, the watch's 1000 events over server-sent events, one render);
 * - bundle_kib: the whole bundle (the list page loads app.js and app.css only; xterm.js
 *   and noVNC are chunks loaded when a console opens), and the first-load part.
 * Reference, same run and browser: the first contentful paint of a static one-line page.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { buildUi } from '../scripts/build-ui';
import type { Target } from '../src/cli/commands/virtctl/target';
import { UiBackend } from '../src/cli/ui/backend';
import { startUiServer } from '../src/cli/ui/server';
import { EmbeddedStore } from '../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';

const N = 1000;
const RUNS = 5;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-ui-'));
const sizes = await buildUi(dir);
const total = Object.values(sizes).reduce((a, b) => a + b, 0);
const firstLoad = (sizes['app.js'] ?? 0) + (sizes['app.css'] ?? 0);

const store = await EmbeddedStore.open();
for (let i = 0; i < N; i++) {
  await store.create(VirtualMachineType, {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: `vm-${String(i).padStart(4, '0')}`, namespace: 'default' },
    spec: {
      runStrategy: 'Halted',
      template: {
        spec: { domain: { cpu: { cores: 1 }, devices: {}, resources: { requests: { memory: '128Mi' } } } },
      },
    },
  } as KubeObject);
}
const target: Target = {
  client: store,
  namespace: 'default',
  where: 'bench',
  subresource: async () => ({}) as never,
  close: () => {},
};
const server = await startUiServer({ backend: new UiBackend(target), assetsDir: dir });
const browser = await chromium.launch({
  executablePath: process.env.KUBEVIRT_TS_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
// Evaluated in the page, as functions (the console's CSP allows no eval); this file has
// no DOM types, hence the loose globals.
type PageGlobals = { document: { querySelectorAll(s: string): { length: number } } };
const fcp = () =>
  new Promise<number>((resolve) => {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) if (e.name === 'first-contentful-paint') resolve(e.startTime);
      // Node's typings lack the browser's 'paint' entry type.
    }).observe({ type: 'paint', buffered: true } as never);
  });
try {
  const paints: number[] = [];
  const renders: number[] = [];
  const refs: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(server.url);
    await page.waitForFunction(
      (n) =>
        (globalThis as unknown as PageGlobals).document.querySelectorAll('table.vms tbody tr').length === n,
      N,
      { timeout: 60_000, polling: 'raf' },
    );
    renders.push(await page.evaluate(() => performance.now()));
    paints.push(await page.evaluate(fcp));
    const ref = await context.newPage();
    await ref.setContent('<!doctype html><p>reference</p>');
    refs.push(await ref.evaluate(fcp));
    await context.close();
  }
  process.stdout.write(
    `BENCH ui first_paint_ms=${median(paints).toFixed(0)} bundle_kib=${(total / 1024).toFixed(0)} list_1000_vms_render_ms=${median(renders).toFixed(0)} first_load_kib=${(firstLoad / 1024).toFixed(0)}\n`,
  );
  process.stdout.write(`BENCH ui-reference static_page_first_paint_ms=${median(refs).toFixed(0)}\n`);
} finally {
  await browser.close();
  await server.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
