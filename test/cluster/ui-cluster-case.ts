/**
 * Issue 30's cluster half, run by operator.serial.test.ts on its running tiny guest: the
 * web console with `--kubeconfig` against the real cluster (kube-apiserver, the kubelet,
 * virt-api installed by the operator), in headless Chromium. The VM is listed Running; its
 * page's serial console (virt-api's `console` websocket, proxied by the UI server) runs a
 * command typed in the browser; Pause and Unpause go through virt-api's subresources and
 * the page shows the VMI's status follow.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { expect } from 'vitest';
import { buildUi } from '../../scripts/build-ui';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { openTarget } from '../../src/cli/commands/virtctl/target';
import { UiBackend } from '../../src/cli/ui/backend';
import { startUiServer } from '../../src/cli/ui/server';
import { integration } from '../support/integration';

const CHROMIUM = process.env.KUBEVIRT_TS_CHROMIUM ?? '/usr/bin/chromium';

/** Whether Chromium is here (under the test command a missing one fails the test). */
export const uiClusterEnabled = () =>
  integration(
    'web console on the cluster in Chromium',
    existsSync(CHROMIUM),
    `no Chromium at ${CHROMIUM}: scripts/setup-host.sh installs it`,
  );

/** Drives the console against `vm` in `namespace`, which must be running. */
export async function webConsoleOnCluster(
  c: { info: ClusterInfo; log: (line: string) => void },
  vm: string,
  namespace: string,
): Promise<void> {
  const assets = mkdtempSync(join(tmpdir(), 'kvts-ui-cluster-'));
  const target = openTarget({ kubeconfig: c.info.kubeconfigPath, namespace });
  const closers: Array<() => Promise<void> | void> = [
    () => rmSync(assets, { recursive: true, force: true }),
    () => target.close(),
  ];
  try {
    await buildUi(assets);
    const server = await startUiServer({ backend: new UiBackend(target), assetsDir: assets });
    closers.push(() => server.close());
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    closers.push(() => browser.close());
    const page = await browser.newPage();
    await page.goto(server.url);
    const row = page.locator(`tr[data-vm="${namespace}/${vm}"] td.status`);
    await expect.poll(() => row.textContent().catch(() => null), { timeout: 60_000 }).toBe('Running');

    await page.goto(`${server.origin}/#/vm/${namespace}/${vm}`);
    const status = () => page.textContent('dd[data-field="status"]');
    await expect.poll(status, { timeout: 30_000 }).toBe('Running');
    await page.click('button[data-open="console"]');
    const consoleText = () =>
      page.$eval(
        '.terminal',
        (el) => (el as unknown as { consoleText?: () => string }).consoleText?.() ?? '',
      );
    // The guest booted before the console opened: a typed command is the proof it is live.
    // Typed again until it shows: the previous console client (virtctl) may still hold
    // virt-api's one console for a moment, and the UI reconnects by itself.
    await expect
      .poll(
        async () => {
          if ((await consoleText()).includes('ui-cluster-42')) return true;
          await page.click('.terminal');
          await page.keyboard.type('echo ui-cluster-$((6*7))\n');
          return false;
        },
        { timeout: 60_000, interval: 2_000 },
      )
      .toBe(true);
    c.log('web console: the serial console ran a typed command');

    await page.click('button[data-action="pause"]');
    await expect.poll(status, { timeout: 60_000 }).toBe('Paused');
    await page.click('button[data-action="unpause"]');
    await expect.poll(status, { timeout: 60_000 }).toBe('Running');
    // No action error was shown (the element holds the API's words when one fails).
    expect((await page.locator('.error').allTextContents()).join('')).toBe('');
    c.log('web console: paused and unpaused through virt-api');
  } finally {
    for (const close of closers.reverse()) await close();
  }
}
