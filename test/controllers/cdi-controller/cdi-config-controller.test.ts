/**
 * CDI's config controller: `status.uploadProxyURL` from the override, else from an Ingress
 * to cdi-uploadproxy in CDI's namespace (as CDI's getURLFromIngress), on the embedded store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CDIConfig } from '../../../src/api/generated/cdi/types';
import {
  type IngressObject,
  uploadProxyHostOf,
  uploadProxyUrlFor,
} from '../../../src/controllers/cdi-controller/cdi-config-controller';
import { registerCdiControllers } from '../../../src/controllers/cdi-controller/cdi-controller';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { Manager } from '../../../src/controllers/runtime/manager';
import { CDIConfigType, IngressType, NamespaceType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { waitFor } from '../../support/wait';

const toProxy = (host: string, service = 'cdi-uploadproxy'): IngressObject => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name: `ing-${service}`, namespace: 'kubevirt' },
  spec: {
    rules: [
      { host: 'other.example', http: { paths: [{ backend: { service: { name: 'web' } } }] } },
      { host, http: { paths: [{ backend: { service: { name: service } } }] } },
    ],
  },
});

describe('uploadProxyURL as CDI sets it', () => {
  it('an Ingress leads to the proxy by a rule path or its default backend', () => {
    expect(uploadProxyHostOf(toProxy('upload.example'))).toBe('upload.example');
    expect(uploadProxyHostOf(toProxy('upload.example', 'web2'))).toBe('');
    const byDefault: IngressObject = {
      metadata: { name: 'd' },
      spec: { defaultBackend: { service: { name: 'cdi-uploadproxy' } }, rules: [{ host: 'first.example' }] },
    };
    expect(uploadProxyHostOf(byDefault)).toBe('first.example');
    // A default backend elsewhere: the rules are not looked at (as CDI).
    expect(
      uploadProxyHostOf({
        ...toProxy('x.example'),
        spec: { ...toProxy('x.example').spec, defaultBackend: { service: { name: 'web' } } },
      }),
    ).toBe('');
    // A rule without a host gives nothing.
    expect(uploadProxyHostOf(toProxy(''))).toBe('');
  });

  it('the override wins over Ingresses; none of either: unset', () => {
    const ings = [toProxy('upload.example')];
    expect(
      uploadProxyUrlFor({ spec: { uploadProxyURLOverride: 'https://1.2.3.4:31001' } } as CDIConfig, ings),
    ).toBe('https://1.2.3.4:31001');
    expect(uploadProxyUrlFor({ spec: {} } as CDIConfig, ings)).toBe('upload.example');
    expect(uploadProxyUrlFor({ spec: {} } as CDIConfig, [])).toBeUndefined();
  });
});

describe('CDI config controller (embedded store)', () => {
  let store: EmbeddedStore;
  let manager: Manager;
  const errors: string[] = [];

  beforeEach(async () => {
    store = await EmbeddedStore.open({ types: [IngressType] });
    await store.create(NamespaceType, {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'kubevirt' },
    });
    manager = new Manager({ client: store });
    registerCdiControllers({
      manager,
      recorder: manager.eventRecorder('cdi-controller'),
      importer: { image: 'kubevirt-ts/launcher:test' },
      uploadProxyNamespace: 'kubevirt',
      onError: (c, k, e) => errors.push(`${c} ${k}: ${e.message}`),
    });
    await manager.start();
  });
  afterEach(async () => {
    await manager.stop();
    await store.close();
    expect(errors).toEqual([]);
    errors.length = 0;
  });

  const config = () => store.get<CDIConfig & KubeObject>(CDIConfigType, 'config').catch(() => undefined);
  const urlIs = (want: string | undefined) =>
    waitFor(`uploadProxyURL ${want}`, async () => {
      const c = await config();
      return c && c.status?.uploadProxyURL === want ? c : undefined;
    });

  it('makes `config`, then follows the override and the Ingresses of its namespace', async () => {
    const made = await waitFor('CDIConfig config made', config);
    expect(made.spec).toEqual({});
    expect(made.status?.uploadProxyURL).toBeUndefined();

    await store.create(IngressType, {
      ...toProxy('elsewhere.example'),
      metadata: { name: 'x', namespace: 'default' },
    } as KubeObject);
    await store.create(IngressType, toProxy('upload.example') as KubeObject);
    await urlIs('upload.example');

    const c = (await config())!;
    await store.update(CDIConfigType, {
      ...c,
      spec: { uploadProxyURLOverride: 'https://10.0.0.9:8443' },
    } as KubeObject);
    await urlIs('https://10.0.0.9:8443');

    const c2 = (await config())!;
    await store.update(CDIConfigType, { ...c2, spec: {} } as KubeObject);
    await urlIs('upload.example');
    await store.delete(IngressType, 'ing-cdi-uploadproxy', { namespace: 'kubevirt' });
    await urlIs(undefined);
  });
});
