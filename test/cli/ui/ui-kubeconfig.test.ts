/**
 * The web console with `--kubeconfig` against a real kube-apiserver (the shared control
 * plane: no kubelet, no virt-api), in headless Chromium: the list follows the API
 * server's watch (a VM created there appears without a reload), Start from the VM page
 * makes the change virtctl makes on a cluster without virt-api (runStrategy Always), and
 * Pause shows the cluster's refusal as virtctl words it. The kubeconfig's credentials stay
 * in the server.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUi } from '../../../scripts/build-ui';
import { crdsDir } from '../../../scripts/gen-crds';
import { openTarget } from '../../../src/cli/commands/virtctl/target';
import { UiBackend } from '../../../src/cli/ui/backend';
import { startUiServer, type UiServer } from '../../../src/cli/ui/server';
import { KubeClient } from '../../../src/controllers/runtime/kube/client';
import {
  DataVolumeType,
  NamespaceType,
  VirtualMachineClusterInstancetypeType,
  VirtualMachineType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { integration } from '../../support/integration';
import {
  available,
  type ControlPlaneAccess,
  kubeBinDir,
  sharedControlPlane,
  unavailableReason,
} from '../../support/kube';

const shotsDir = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../../docs/ui');
const CHROMIUM = process.env.KUBEVIRT_TS_CHROMIUM ?? '/usr/bin/chromium';
const run = integration(
  'web console with --kubeconfig in Chromium',
  available() && existsSync(CHROMIUM),
  available()
    ? `no Chromium at ${CHROMIUM}: scripts/setup-host.sh --with-kube installs it`
    : unavailableReason,
);

const vmObject = (name: string, ns: string) =>
  ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace: ns },
    spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
  }) as KubeObject;

describe.runIf(run)('kubevirt-ts ui --kubeconfig against a real API server', () => {
  const ns = `ui-kube-${process.pid}`;
  let cp: ControlPlaneAccess;
  let client: KubeClient;
  let server: UiServer;
  let browser: Browser;
  let page: Page;
  let assets = '';

  beforeAll(async () => {
    cp = await sharedControlPlane();
    const kubectl = path.join(kubeBinDir, 'kubectl');
    const applied = spawnSync(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', crdsDir], {
      encoding: 'utf8',
    });
    expect(applied.status, applied.stderr).toBe(0);
    const waited = spawnSync(
      kubectl,
      [
        '--kubeconfig',
        cp.kubeconfigPath,
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        'crd/virtualmachines.kubevirt.io',
        'crd/datavolumes.cdi.kubevirt.io',
        'crd/virtualmachineclusterinstancetypes.instancetype.kubevirt.io',
        'crd/virtualmachinesnapshots.snapshot.kubevirt.io',
      ],
      { encoding: 'utf8' },
    );
    expect(waited.status, waited.stderr).toBe(0);
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath);
    await client.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await client.create(VirtualMachineType, vmObject('k1', ns));
    assets = mkdtempSync(path.join(tmpdir(), 'kvts-ui-kube-'));
    await buildUi(assets);
    server = await startUiServer({
      backend: new UiBackend(openTarget({ kubeconfig: cp.kubeconfigPath, namespace: ns })),
      assetsDir: assets,
    });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await client?.delete(NamespaceType, ns).catch(() => undefined);
    client?.close();
    if (assets) rmSync(assets, { recursive: true, force: true });
  });

  it('lists the namespace live, starts a VM, and shows the API refusal of pause', async () => {
    const seen: string[] = [];
    page.on('response', async (r) => {
      if (r.headers()['content-type']?.includes('json')) seen.push(await r.text().catch(() => ''));
    });
    await page.goto(server.url);
    const status = (vm: string) => page.locator(`tr[data-vm="${ns}/${vm}"] td.status`);
    await expect.poll(() => status('k1').count(), { timeout: 30_000 }).toBe(1);
    expect(await page.textContent('.where')).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/?$/);
    await client.create(VirtualMachineType, vmObject('k2', ns));
    await expect.poll(() => status('k2').count(), { timeout: 30_000 }).toBe(1);

    await page.click(`tr[data-vm="${ns}/k1"] a`);
    await page.click('button[data-action="start"]');
    await expect
      .poll(
        async () =>
          ((await client.get(VirtualMachineType, 'k1', ns)) as KubeObject & { spec: { runStrategy: string } })
            .spec.runStrategy,
        {
          timeout: 30_000,
        },
      )
      .toBe('Always');
    await page.click('button[data-action="pause"]');
    await expect
      .poll(() => page.textContent('.error'), { timeout: 30_000 })
      .toContain('pause: the cluster does not serve subresources.kubevirt.io');
    // What the browser got never carries the kubeconfig's client key.
    const keyFile = /client-key: "([^"]+)"/.exec(readFileSync(cp.kubeconfigPath, 'utf8'))?.[1] as string;
    const key = readFileSync(keyFile, 'utf8')
      .split('\n')
      .find((l) => l.length > 40) as string;
    // A line of the base64 key body: what a leak would carry.
    expect(key).toMatch(/^[A-Za-z0-9+/=]{41,}$/);
    expect(seen.length).toBeGreaterThan(2);
    for (const body of seen) expect(body.includes(key)).toBe(false);
  }, 120_000);

  it('creates a VM from an instance type and a URL import, shows its DataVolume importing, and lists the other kinds', async () => {
    await client.create(VirtualMachineClusterInstancetypeType, {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClusterInstancetype',
      metadata: { name: `ui-small-${process.pid}` },
      spec: { cpu: { guest: 1 }, memory: { guest: '128Mi' } },
    } as KubeObject);
    // The form's first catalog request answers late, after the user chose the instance type
    // from a later one: it must not reset that choice.
    let requests = 0;
    let staleAnswered = false;
    await page.route('**/api/catalog?*', (route) => {
      if (++requests > 1) return route.continue();
      // Answered in the background: the handler returns at once, so later requests pass.
      void (async () => {
        const response = await route.fetch();
        await new Promise((r) => setTimeout(r, 1_500));
        await route.fulfill({ response });
        staleAnswered = true;
      })();
    });
    await page.goto(`${server.origin}/#/create`);
    await page.fill('#f-name', 'k3');
    await page.fill('#f-namespace', ns);
    await page.selectOption('#f-source', 'http');
    expect(await page.textContent('label[for="f-image"]')).toBe('Image URL');
    await page.fill('#f-image', 'http://127.0.0.1:1/disk.qcow2');
    await page.fill('#f-size', '64Mi');
    // The namespace's catalog: the cluster instance type is offered; choosing it hides CPU and memory.
    await page.locator('#f-namespace').dispatchEvent('change');
    const itValue = `VirtualMachineClusterInstancetype/ui-small-${process.pid}`;
    await expect
      .poll(() => page.locator(`#f-instancetype option[value="${itValue}"]`).count(), { timeout: 10_000 })
      .toBe(1);
    await page.selectOption('#f-instancetype', itValue);
    await expect.poll(() => staleAnswered, { timeout: 10_000 }).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(await page.inputValue('#f-instancetype')).toBe(itValue);
    expect(await page.isVisible('#f-cores')).toBe(false);
    await page.unroute('**/api/catalog?*');
    await page.selectOption('#f-runStrategy', 'Halted');
    await page.click('form.create button[type="submit"]');
    await expect.poll(() => page.url(), { timeout: 30_000 }).toContain(`#/vm/${ns}/k3`);
    const vm = (await client.get(VirtualMachineType, 'k3', ns)) as KubeObject & {
      spec: {
        instancetype?: unknown;
        dataVolumeTemplates: Array<{ spec: Record<string, unknown> }>;
        template: { spec: { domain: { cpu?: unknown }; volumes: unknown[] } };
      };
    };
    expect(vm.spec.instancetype).toEqual({
      kind: 'VirtualMachineClusterInstancetype',
      name: `ui-small-${process.pid}`,
    });
    expect(vm.spec.template.spec.domain.cpu).toBeUndefined();
    expect(vm.spec.dataVolumeTemplates).toEqual([
      {
        metadata: { name: 'k3-root' },
        spec: {
          source: { http: { url: 'http://127.0.0.1:1/disk.qcow2' } },
          storage: { resources: { requests: { storage: '64Mi' } } },
        },
      },
    ]);
    expect(vm.spec.template.spec.volumes).toEqual([{ name: 'root', dataVolume: { name: 'k3-root' } }]);
    await expect
      .poll(() => page.textContent('dd[data-field="instance-type"]'), { timeout: 30_000 })
      .toBe(`ui-small-${process.pid} (VirtualMachineClusterInstancetype)`);
    // No CDI runs on this control plane: the test writes the DataVolume's status as CDI would.
    const dv = await client.create(DataVolumeType, {
      apiVersion: 'cdi.kubevirt.io/v1beta1',
      kind: 'DataVolume',
      metadata: { name: 'k3-root', namespace: ns },
      spec: vm.spec.dataVolumeTemplates[0]?.spec,
    } as KubeObject);
    await client.updateStatus(DataVolumeType, {
      ...dv,
      status: { phase: 'ImportInProgress', progress: '45.20%' },
    });
    const bar = page.locator('span.dv-status[data-dv="k3-root"] progress');
    await expect.poll(() => bar.getAttribute('value'), { timeout: 30_000 }).toBe('45.2');
    expect(await page.getAttribute('span.dv-status[data-dv="k3-root"]', 'data-phase')).toBe(
      'ImportInProgress',
    );
    await page.screenshot({ path: path.join(shotsDir, 'import-progress.png') });

    await page.goto(`${server.origin}/#/resources/${ns}`);
    await expect
      .poll(() => page.getAttribute('table[data-list="datavolumes"] span.dv-status progress', 'value'), {
        timeout: 30_000,
      })
      .toBe('45.2');
    expect(await page.textContent('p[data-list="vmis"]')).toBe('None.');
    expect(await page.textContent('p[data-list="snapshots"]')).toBe('None.');
    expect(await page.textContent('p[data-list="migrations"]')).toBe('None.');
  }, 120_000);
});
