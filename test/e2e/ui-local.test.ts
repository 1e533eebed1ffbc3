/**
 * The web console end to end: real headless Chromium (Debian's, driven by playwright-core)
 * against the console a real local mode serves (`up -d --ui`, the built CLI, which prints
 * the URL) with the tiny guest. One page keeps the VM list open while another works on the VM: the list sees
 * the VM appear and turn Running without a reload; the serial console shows the boot
 * marker and runs a command typed in the browser; VNC draws a non-blank frame; pause and
 * unpause change the status shown; a VM created through the form boots; an invalid form
 * shows the admission error under its field; delete asks first; the VM page graphs the
 * guest's CPU and memory from virt-handler's metrics. Two guests boot in all.
 * The screenshots in docs/ui.md are taken here (docs/ui/*.png).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTarget, type Target } from '../../src/cli/commands/virtctl/target';
import { PodType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { stopVm } from '../../src/controllers/virt-api/vm-lifecycle';
import { available, BOOT_MARKER, bootDiskPath, guestDir, unavailableReason } from '../support/guest';
import { integration } from '../support/integration';
import { cliEntry, tinyGuestVm, waitFor } from './node-harness';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CHROMIUM = process.env.KUBEVIRT_TS_CHROMIUM ?? '/usr/bin/chromium';
const shots = path.join(repoRoot, 'docs', 'ui');
const cli = cliEntry();
const bundle = path.join(path.dirname(cli), '..', 'ui', 'app.js');

// Each launcher runs its own libvirt daemons: the host's libvirtd is not needed.
const run = integration(
  'web console in Chromium against local mode',
  available() && existsSync(cli) && existsSync(bundle) && existsSync(CHROMIUM),
  !available()
    ? unavailableReason
    : !existsSync(cli) || !existsSync(bundle)
      ? `the CLI build (${cli}, ${bundle}) is missing: npm run build`
      : `no Chromium at ${CHROMIUM}: scripts/setup-host.sh --with-kube installs Debian's chromium`,
);

describe.runIf(run)('kubevirt-ts ui in a real browser, local mode, real guests', () => {
  const a = `ui-a-${process.pid}`;
  const b = `ui-b-${process.pid}`;
  let state = '';
  let target: Target;
  let server: { url: string; origin: string };
  let browser: Browser;
  let list: Page;
  let page: Page;
  const ctl = (...args: string[]) =>
    spawnSync(process.execPath, [cli, ...args, '--state-dir', state], { encoding: 'utf8', timeout: 120_000 });
  const status = (p: Page, vm: string) => p.locator(`tr[data-vm="default/${vm}"] td.status`);

  beforeAll(async () => {
    state = mkdtempSync(path.join(tmpdir(), 'kvts-ui-'));
    chmodSync(state, 0o755);
    expect(ctl('image', 'import', 'kubevirt-ts/tiny-guest', guestDir).status).toBe(0);
    expect(ctl('image', 'import', 'kubevirt-ts/tiny-boot:1', bootDiskPath).status).toBe(0);
    const up = ctl('up', '-d', '--no-pod-network', '--ui');
    expect(up.status, up.stderr).toBe(0);
    const url = /web console: (http:\/\/127\.0\.0\.1:\d+\/\?token=\S+)/.exec(up.stderr + up.stdout)?.[1];
    expect(url, up.stderr).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{16,}$/);
    server = { url: url as string, origin: new URL(url as string).origin };
    target = openTarget({ stateDir: state });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    list = await context.newPage();
    await list.goto(server.url);
    page = await context.newPage();
    mkdirSync(shots, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    if (target) {
      for (const vm of [a, b]) {
        await stopVm(target.client, 'default', vm, { gracePeriod: 0 }).catch(() => {});
        await target.client.delete(VirtualMachineType, vm, { namespace: 'default' }).catch(() => {});
      }
      await waitFor(
        'the launcher pods to go',
        async () => (await target.client.list(PodType, { namespace: 'default' })).items.length === 0,
        120_000,
      ).catch(() => {});
      target.close();
    }
    const pid = Number(spawnSync('cat', [path.join(state, 'up.pid')], { encoding: 'utf8' }).stdout);
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {}
      await waitFor('up to exit', () => spawnSync('kill', ['-0', String(pid)]).status !== 0, 30_000).catch(
        () => {},
      );
    }
    rmSync(state, { recursive: true, force: true });
  }, 240_000);

  it('answers 401 to a request without the session token', async () => {
    expect((await fetch(`${server.origin}/api/info`)).status).toBe(401);
    expect((await fetch(`${server.origin}/`)).status).toBe(401);
  });

  it('lists a new VM without a reload, and starting it from its page boots it: console marker, typed command, Running', async () => {
    await list.waitForSelector('table.vms, p.empty');
    const vm = tinyGuestVm(a, 'default', 'Halted') as unknown as KubeObject & {
      spec: { template: { spec: { domain: { devices: Record<string, unknown> } } } };
    };
    // A graphics device for VNC (the tiny guest's example turns it off).
    delete vm.spec.template.spec.domain.devices.autoattachGraphicsDevice;
    await target.client.create(VirtualMachineType, vm);
    await expect.poll(() => status(list, a).textContent(), { timeout: 30_000 }).toBe('Stopped');

    await page.goto(`${server.origin}/#/vm/default/${a}`);
    await page.click('button[data-open="console"]');
    await page.click('button[data-action="start"]');
    const consoleText = () =>
      page.$eval(
        '.terminal',
        (el) => (el as unknown as { consoleText?: () => string }).consoleText?.() ?? '',
      );
    await expect.poll(consoleText, { timeout: 150_000, interval: 500 }).toContain(BOOT_MARKER);
    await expect.poll(() => page.textContent('dd[data-field="status"]'), { timeout: 60_000 }).toBe('Running');
    // The list page, never reloaded, follows the watch.
    await expect.poll(() => status(list, a).textContent(), { timeout: 30_000 }).toBe('Running');

    await page.click('.terminal');
    await page.keyboard.type('echo ui-typed-$((6*7))\n');
    await expect.poll(consoleText, { timeout: 30_000, interval: 300 }).toContain('ui-typed-42');
    await page.screenshot({ path: path.join(shots, 'console.png') });
    await list.screenshot({ path: path.join(shots, 'list.png') });
  }, 240_000);

  it('pause and unpause change the status shown', async () => {
    await page.click('button[data-action="pause"]');
    await expect.poll(() => page.textContent('dd[data-field="status"]'), { timeout: 60_000 }).toBe('Paused');
    await expect.poll(() => status(list, a).textContent(), { timeout: 30_000 }).toBe('Paused');
    await page.click('button[data-action="unpause"]');
    await expect.poll(() => page.textContent('dd[data-field="status"]'), { timeout: 60_000 }).toBe('Running');
    // The page lists the VM's and the VMI's Events and conditions.
    await expect.poll(() => page.locator('table.events tr').count(), { timeout: 30_000 }).toBeGreaterThan(1);
    expect(await page.locator('table.conditions').first().textContent()).toContain('Ready');
  }, 150_000);

  it("graphs the running guest's CPU and memory from virt-handler's metrics, refreshed while the page is open", async () => {
    const latest = (figure: string) =>
      page.$eval(`span[data-figure="${figure}"]`, (el) => Number(el.getAttribute('data-latest') || 0));
    const points = () =>
      page.$eval('figure[data-graph="cpu"]', (el) => Number(el.getAttribute('data-points') || 0));
    await expect.poll(points, { timeout: 30_000, interval: 500 }).toBeGreaterThanOrEqual(2);
    await expect.poll(() => latest('cpuCores'), { timeout: 30_000, interval: 500 }).toBeGreaterThan(0);
    // QEMU's resident size (the tiny guest reports no balloon statistics): what QEMU touched,
    // well above nothing and below the guest's memory plus the launcher's overhead.
    const memory = await latest('memoryBytes');
    expect(memory).toBeGreaterThan(16 * 1024 * 1024);
    expect(memory).toBeLessThan(1024 * 1024 * 1024);
    expect(await page.textContent('.usage-source')).toMatch(/^From virt-handler, the last \d+ min\.$/);
    const before = await points();
    await expect.poll(points, { timeout: 30_000, interval: 500 }).toBeGreaterThan(before);
    expect(await page.locator('figure[data-graph="cpu"] polyline').count()).toBe(1);
    await page.locator('section.usage').screenshot({ path: path.join(shots, 'graphs.png') });
  }, 90_000);

  it('VNC draws a non-blank frame', async () => {
    await page.click('button[data-open="vnc"]');
    const distinctColours = () =>
      page.$eval('.vnc canvas', (c) => {
        const canvas = c as unknown as {
          width: number;
          height: number;
          getContext(
            kind: '2d',
          ): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } | null;
        };
        if (canvas.width < 100) return 0;
        const data = canvas.getContext('2d')?.getImageData(0, 0, canvas.width, canvas.height).data;
        const seen = new Set<number>();
        for (let i = 0; data && i < data.length; i += 4 * 97)
          seen.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
        return seen.size;
      });
    await expect.poll(distinctColours, { timeout: 60_000, interval: 500 }).toBeGreaterThan(1);
    await page.screenshot({ path: path.join(shots, 'vnc.png') });
  }, 90_000);

  it('works by keyboard and in a narrow window', async () => {
    const narrow = await list.context().newPage();
    await narrow.setViewportSize({ width: 380, height: 700 });
    await narrow.goto(`${server.origin}/`);
    await expect.poll(() => status(narrow, a).textContent(), { timeout: 30_000 }).toBe('Running');
    // The secondary columns go; name and status stay.
    expect(await narrow.locator(`tr[data-vm="default/${a}"] td.node`).isVisible()).toBe(false);
    await narrow.screenshot({ path: path.join(shots, 'list-narrow.png') });
    // Tab to the VM's link and open it with Enter.
    const focused = () =>
      narrow.evaluate(
        () =>
          (globalThis as unknown as { document: { activeElement: { textContent: string } | null } }).document
            .activeElement?.textContent ?? '',
      );
    for (let i = 0; i < 10 && (await focused()) !== a; i++) await narrow.keyboard.press('Tab');
    expect(await focused()).toBe(a);
    await narrow.keyboard.press('Enter');
    await narrow.waitForURL(new RegExp(`#/vm/default/${a}$`));
    await expect
      .poll(() => narrow.textContent('dd[data-field="status"]'), { timeout: 15_000 })
      .toBe('Running');
    await narrow.close();
  }, 60_000);

  it('the YAML editor refuses an invalid change with the admission error and saves a valid one', async () => {
    await page.click('button[data-open="yaml"]');
    const text = await page.inputValue('#yaml-text');
    expect(text).toContain(`name: ${a}`);
    await page.fill('#yaml-text', text.replace('memory: 128Mi', 'memory: 1Ki'));
    await page.click('button[data-yaml="save"]');
    await expect
      .poll(() => page.textContent('#yaml-error'), { timeout: 15_000 })
      .toContain(
        "spec.template.spec.domain.resources.requests.memory '1Ki': must be greater than or equal to 1M",
      );
    const line = new RegExp(`^( *)kubevirt\\.io/vm: ${a}$`, 'm').exec(text);
    expect(line?.[0], text).toMatch(new RegExp(`kubevirt\\.io/vm: ${a}$`));
    const edited = text.replace(line?.[0] as string, `${line?.[0]}\n${line?.[1]}ui-edited: "yes"`);
    await page.fill('#yaml-text', edited);
    await page.click('button[data-yaml="save"]');
    await expect.poll(() => page.textContent('.status-line'), { timeout: 15_000 }).toBe('saved');
    const vm = (await target.client.get(VirtualMachineType, a, 'default')) as KubeObject & {
      spec: { template: { metadata: { labels: Record<string, string> } } };
    };
    expect(vm.spec.template.metadata.labels['ui-edited']).toBe('yes');
  }, 60_000);

  it('restart boots the guest again (marker in the open console), stop stops it', async () => {
    await page.click('button[data-open="console"]');
    await expect.poll(() => page.textContent('.stream-state'), { timeout: 15_000 }).toBe('connected');
    const consoleText = () =>
      page.$eval(
        '.terminal',
        (el) => (el as unknown as { consoleText?: () => string }).consoleText?.() ?? '',
      );
    // The launcher may replay recent output to a new connection: count boots, not text.
    const boots = async () => (await consoleText()).split(BOOT_MARKER).length - 1;
    // A live echo first: whatever replay there is has arrived before it. A replayed
    // terminal query makes xterm.js answer into the shell's line: Enter flushes that first.
    await page.click('.terminal');
    await page.keyboard.type('\n');
    await page.keyboard.type('echo pre-restart-$((2*21))\n');
    await expect.poll(consoleText, { timeout: 30_000, interval: 300 }).toContain('pre-restart-42');
    const before = await boots();
    await page.click('button[data-action="restart"]');
    // The console reconnects to the new launcher by itself and shows the new boot.
    await expect.poll(boots, { timeout: 150_000, interval: 500 }).toBeGreaterThan(before);
    await expect.poll(() => status(list, a).textContent(), { timeout: 60_000 }).toBe('Running');
    await page.click('button[data-action="stop"]');
    await expect.poll(() => page.textContent('.status-line'), { timeout: 15_000 }).toBe('stop: requested');
    const vm = await target.client.get(VirtualMachineType, a, 'default');
    expect({
      error: await page.textContent('.error'),
      runStrategy: (vm as KubeObject & { spec: { runStrategy: string } }).spec.runStrategy,
    }).toEqual({ error: '', runStrategy: 'Halted' });
    await expect.poll(() => status(list, a).textContent(), { timeout: 150_000 }).toBe('Stopped');
  }, 300_000);

  it('an invalid form shows the admission error under its field', async () => {
    await page.goto(`${server.origin}/#/create`);
    await page.fill('#f-name', b);
    await page.fill('#f-image', 'kubevirt-ts/tiny-boot:1');
    await page.fill('#f-memory', '1Ki');
    await page.selectOption('#f-network', 'none');
    await page.click('button[type="submit"]');
    await expect
      .poll(() => page.textContent('#f-memory-error'), { timeout: 15_000 })
      .toContain(
        "spec.template.spec.domain.resources.requests.memory '1Ki': must be greater than or equal to 1M",
      );
    await page.screenshot({ path: path.join(shots, 'create-error.png') });
    // A missing image is refused at its field too (local mode reaches no registry).
    await page.fill('#f-memory', '128Mi');
    await page.fill('#f-image', 'example.com/missing:1');
    await page.click('button[type="submit"]');
    await expect
      .poll(() => page.textContent('#f-image-error'), { timeout: 15_000 })
      .toContain('is not in the local image store');
  }, 60_000);

  it('a VM created through the form boots (containerDisk), and delete asks first', async () => {
    await page.fill('#f-image', 'kubevirt-ts/tiny-boot:1');
    await page.selectOption('#f-runStrategy', 'Halted');
    await page.click('button[type="submit"]');
    await page.waitForURL(new RegExp(`#/vm/default/${b}$`));
    await page.click('button[data-open="console"]');
    await page.click('button[data-action="start"]');
    const consoleText = () =>
      page.$eval(
        '.terminal',
        (el) => (el as unknown as { consoleText?: () => string }).consoleText?.() ?? '',
      );
    await expect.poll(consoleText, { timeout: 180_000, interval: 500 }).toContain(BOOT_MARKER);
    await expect.poll(() => status(list, b).textContent(), { timeout: 60_000 }).toBe('Running');

    await page.click('button[data-action="delete"]');
    await page.click('dialog button[value="cancel"]');
    expect(await status(list, b).count()).toBe(1);
    await page.click('button[data-action="delete"]');
    await page.click('dialog button[value="ok"]');
    await expect.poll(() => status(list, b).count(), { timeout: 90_000 }).toBe(0);
  }, 300_000);
});
