/**
 * The handler's REST server admits the client certificate virt-operator issues to
 * virt-api (the `kubevirt-virt-handler-certs` leaf: upstream's common name, clientAuth)
 * and refuses the operator's other leaves, all signed by the same KubeVirt CA.
 */
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { clientIdentityRefusal } from '../../../src/controllers/virt-handler/client-identity';
import { leafSpecs } from '../../../src/controllers/virt-operator/cert-rotation';
import { createCA, createLeaf } from '../../../src/controllers/virt-operator/certificates';

describe("virt-api's client identity", () => {
  it("admits the operator's virt-api client leaf and refuses its other leaves", async () => {
    const now = new Date();
    const ca = await createCA('kubevirt.io@1', now, 86_400_000);
    const refusals: Record<string, string | undefined> = {};
    for (const [name, spec] of Object.entries(leafSpecs('kubevirt'))) {
      const leaf = await createLeaf(ca, spec, now, 3_600_000);
      refusals[name] = clientIdentityRefusal(new X509Certificate(leaf.cert));
    }
    expect(refusals['kubevirt-virt-handler-certs']).toBeUndefined();
    for (const [name, why] of Object.entries(refusals))
      if (name !== 'kubevirt-virt-handler-certs')
        expect(why, name).toMatch(/common name .* is not kubevirt\.io:system:client:virt-handler/);
    // The right name for serving only: refused for its usage.
    const server = await createLeaf(
      ca,
      { commonName: 'kubevirt.io:system:client:virt-handler', dnsNames: ['x'], usage: 'server' },
      now,
      3_600_000,
    );
    expect(clientIdentityRefusal(new X509Certificate(server.cert))).toMatch(/not for client authentication/);
    expect(clientIdentityRefusal(undefined)).toBe('no client certificate');
  });
});
