/**
 * The proxy's view of the cluster through the API: an export's phase and Service name,
 * and that Service's ClusterIP. Upstream dials `{service}.{ns}.svc:443` through the
 * cluster's DNS; a cluster without DNS (this project's test cluster) still routes
 * ClusterIPs, so the address comes from the Service object and the DNS name is kept only
 * to verify the server's certificate. One GET each per request: downloads are few and
 * long, and no cache holds every export and Service of the cluster.
 */
import { NotFoundError } from '../runtime/errors';
import { resourceType, ServiceType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { type ExportLookup, ProxyError } from './proxy';

/** The export kind, as the API serves it (declared here: components do not import virt-controller's files). */
const VirtualMachineExportType = resourceType(
  'export.kubevirt.io',
  'v1',
  'VirtualMachineExport',
  'virtualmachineexports',
  true,
  true,
);

type Export = KubeObject & { status?: { phase?: string; serviceName?: string } };
type Service = KubeObject & { spec?: { clusterIP?: string } };

/** An {@link ExportLookup} over `client`. */
export function apiExportLookup(client: ObjectClient): ExportLookup {
  return {
    exportStatus: async (namespace, name) => {
      try {
        const e = await client.get<Export>(VirtualMachineExportType, name, namespace);
        return e.status ?? {};
      } catch (err) {
        if (err instanceof NotFoundError) return undefined;
        throw err;
      }
    },
    resolveService: async (namespace, name) => {
      const svc = await client.get<Service>(ServiceType, name, namespace).catch((err: unknown) => {
        if (err instanceof NotFoundError)
          throw new ProxyError(502, `the export Service ${namespace}/${name} does not exist`);
        throw err;
      });
      const ip = svc.spec?.clusterIP;
      if (!ip || ip === 'None')
        throw new ProxyError(502, `the export Service ${namespace}/${name} has no cluster IP`);
      return { host: ip, port: 443, servername: `${name}.${namespace}.svc` };
    },
  };
}
