/** The libvirt driver's live migration (`MigrationSupport`). */
import type { VirtualMachineInstance } from '../../api';
import { type DomainRef, domainName, type MigrationSupport, type SyncOptions } from '../driver';
import { DriverError } from '../errors';
import {
  DomainXMLFlags,
  type LibvirtClient,
  type DomainRef as LibvirtDomain,
  MigrateFlags,
  type TypedParam,
  tp,
  typedParamsToRecord,
} from '../libvirt';
import { migratableXmlForTarget } from './migratable-xml';
import { migrationDiskTargets } from './migration-disks';

/** VIR_MIGRATE_UNSAFE: migrate even where libvirt thinks it unsafe (e.g. disk cache modes). */
const MIGRATE_UNSAFE = 512;
/** VIR_MIGRATE_PARALLEL: memory over several connections (`parallel.connections`). */
const MIGRATE_PARALLEL = 131072;

/** What migration needs of its driver. */
export interface MigrationDeps {
  client(): LibvirtClient;
  /** Renders the target pod's domain XML (the cookie the source sends back with its own). */
  prepare(vmi: VirtualMachineInstance, options: SyncOptions): Promise<string>;
  lookup(ref: DomainRef): Promise<LibvirtDomain>;
  lookupActive(ref: DomainRef, op: string): Promise<LibvirtDomain>;
  call<T>(name: string, op: string, fn: () => Promise<T>): Promise<T>;
  delete(ref: DomainRef): Promise<void>;
}

/**
 * Live migration, peer to peer, as upstream's launcher does it: the source daemon
 * connects to the target daemon itself (`virDomainMigrateToURI3` with LIVE | PEER2PEER
 * | PERSIST_DEST | UNDEFINE_SOURCE, plus AUTO_CONVERGE / POSTCOPY / UNSAFE as the
 * options ask). The target's driver renders the domain for its own pod in
 * `prepareTarget`; that XML travels as the cookie, and the source sends its own
 * migratable live XML with the target's paths swapped in (`destination_xml` and
 * `persistent_xml`), so the guest ABI is unchanged and its sockets land in the target
 * pod's directories.
 */
export function libvirtMigration(d: MigrationDeps): MigrationSupport {
  return {
    prepareTarget: (vmi, options = {}) => d.prepare(vmi, options),
    migrateSource: async (ref, targetUri, cookie, options = {}) => {
      if (!/^[a-z][a-z0-9+.-]*:\/\/[^\s]*$/.test(targetUri)) {
        throw new DriverError(
          'Invalid',
          `migration of ${domainName(ref)}: target URI ${JSON.stringify(targetUri)} is not a libvirt URI (e.g. qemu+tcp://node2/system)`,
        );
      }
      const bandwidth = options.bandwidthMiBps ?? 0;
      if (!Number.isInteger(bandwidth) || bandwidth < 0) {
        throw new DriverError(
          'Invalid',
          `migration of ${domainName(ref)}: bandwidth ${bandwidth} MiB/s must be a non-negative integer`,
        );
      }
      if (options.disksUri !== undefined && !/^(tcp|unix):\/\/[^\s]+$/.test(options.disksUri)) {
        throw new DriverError(
          'Invalid',
          `migration of ${domainName(ref)}: disks URI ${JSON.stringify(options.disksUri)} is not a tcp:// or unix:// URI`,
        );
      }
      const dom = await d.lookupActive(ref, 'migrate');
      const params: TypedParam[] = [];
      const readLive = () =>
        d.call(dom.name, 'read migratable XML', () =>
          d.client().domainGetXMLDesc(dom, DomainXMLFlags.SECURE | DomainXMLFlags.MIGRATABLE),
        );
      if (cookie) {
        const live = await readLive();
        let xmlForTarget: string;
        try {
          xmlForTarget = migratableXmlForTarget(live, cookie);
        } catch (e) {
          throw new DriverError(
            'Invalid',
            `migration of ${dom.name}: the target's prepared domain XML is unusable: ${(e as Error).message}`,
          );
        }
        params.push(tp.string('destination_xml', xmlForTarget), tp.string('persistent_xml', xmlForTarget));
      }
      if (bandwidth > 0) params.push(tp.ullong('bandwidth', bandwidth));
      if (options.migrateUri) {
        if (!/^(tcp|unix|rdma):\/\/[^\s]+$/.test(options.migrateUri)) {
          throw new DriverError(
            'Invalid',
            `migration of ${domainName(ref)}: migrate URI ${JSON.stringify(options.migrateUri)} is not a tcp://, unix:// or rdma:// URI`,
          );
        }
        params.push(tp.string('migrate_uri', options.migrateUri));
      }
      let flags =
        MigrateFlags.LIVE | MigrateFlags.PEER2PEER | MigrateFlags.PERSIST_DEST | MigrateFlags.UNDEFINE_SOURCE;
      if (options.blockMigration) {
        // As upstream: the local disks' top layers are copied (the target has the same backing images).
        const devs = migrationDiskTargets(await readLive(), options.blockMigration);
        if (devs.length > 0) {
          flags |= MigrateFlags.NON_SHARED_INC;
          for (const dev of devs) params.push(tp.string('migrate_disks', dev));
          if (options.disksUri) params.push(tp.string('disks_uri', options.disksUri));
        }
      }
      if (options.allowAutoConverge) flags |= MigrateFlags.AUTO_CONVERGE;
      if (options.allowPostCopy) flags |= MigrateFlags.POSTCOPY;
      if (options.unsafe) flags |= MIGRATE_UNSAFE;
      if (options.parallelConnections !== undefined) {
        const n = options.parallelConnections;
        if (!Number.isInteger(n) || n < 1) {
          throw new DriverError(
            'Invalid',
            `migration of ${domainName(ref)}: parallel connections ${n} must be a positive integer`,
          );
        }
        flags |= MIGRATE_PARALLEL;
        params.push(tp.int('parallel.connections', n));
      }
      await d.call(dom.name, `migrate to ${targetUri}`, () =>
        d.client().domainMigrateToURI3(dom, targetUri, params, flags),
      );
    },
    progress: async (ref) => {
      const dom = await d.lookup(ref);
      const job = await d.call(dom.name, 'read migration job', () => d.client().domainGetJobStats(dom));
      // virDomainJobType: 1 bounded, 2 unbounded (a migration); anything else: no job running.
      if (job.type !== 1 && job.type !== 2) return undefined;
      const p = typedParamsToRecord(job.params);
      const n = (k: string) => Number(p[k] ?? 0);
      return {
        dataTotal: n('data_total'),
        dataProcessed: n('data_processed'),
        dataRemaining: n('data_remaining'),
        elapsedMs: n('time_elapsed'),
      };
    },
    cancel: async (ref) => {
      const dom = await d.lookup(ref);
      await d.call(dom.name, 'abort migration job', () => d.client().domainAbortJob(dom));
    },
    startPostCopy: async (ref) => {
      const dom = await d.lookup(ref);
      await d.call(dom.name, 'start post-copy', () => d.client().domainMigrateStartPostCopy(dom));
    },
    setMaxDowntime: async (ref, ms) => {
      if (!Number.isInteger(ms) || ms < 1) {
        throw new DriverError(
          'Invalid',
          `migration of ${domainName(ref)}: max downtime ${ms} ms must be a positive integer`,
        );
      }
      const dom = await d.lookup(ref);
      await d.call(dom.name, 'set the migration max downtime', () =>
        d.client().domainMigrateSetMaxDowntime(dom, ms),
      );
    },
    abortTarget: (ref) => d.delete(ref),
  };
}
