/** libvirt's per-domain remote calls, a layer of `LibvirtClient` (./client). */

import { checkText } from './client-tables';
import { LibvirtConnection } from './connection';
import {
  REMOTE_DOMAIN_FSFREEZE_MOUNTPOINTS_MAX,
  REMOTE_DOMAIN_JOB_STATS_MAX,
  RemoteProc,
  VIR_UUID_BUFLEN,
} from './protocol/constants';
import {
  type BlockStats,
  type DomainInfo,
  type DomainJobInfo,
  type DomainStateInfo,
  type InterfaceStats,
  type MemoryStat,
  readBlockStats,
  readDomainInfo,
  readInterfaceStats,
  readJobInfo,
  readMemoryStats,
} from './protocol/remote';
import {
  type DomainRef,
  readDomain,
  readString,
  readTypedParams,
  type TypedParam,
  uuidToBytes,
  writeDomain,
  writeString,
} from './protocol/types';

/** libvirt's per-domain calls: definition, lifecycle, state, devices, statistics and jobs. */
export abstract class LibvirtDomainCalls extends LibvirtConnection {
  /** Defines (or redefines) a persistent domain from XML. */
  async domainDefineXML(xml: string, flags = 0): Promise<DomainRef> {
    checkText('domain XML', xml);
    return this.rpc(
      RemoteProc.DOMAIN_DEFINE_XML_FLAGS,
      (w) => {
        writeString(w, xml);
        w.uint(flags, 'flags');
      },
      readDomain,
    );
  }

  /** Removes a domain's persistent definition (UndefineFlags). */
  async domainUndefine(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_UNDEFINE_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  /** Starts a defined domain (CreateFlags); returns it with its new id. */
  async domainCreate(dom: DomainRef, flags = 0): Promise<DomainRef> {
    return this.rpc(
      RemoteProc.DOMAIN_CREATE_WITH_FLAGS,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      readDomain,
    );
  }

  /** Creates and starts a transient domain from XML. */
  async domainCreateXML(xml: string, flags = 0): Promise<DomainRef> {
    checkText('domain XML', xml);
    return this.rpc(
      RemoteProc.DOMAIN_CREATE_XML,
      (w) => {
        writeString(w, xml);
        w.uint(flags, 'flags');
      },
      readDomain,
    );
  }

  /** Finds a domain by name; rejects with code 42 (`VIR_ERR_NO_DOMAIN`) when absent. */
  async domainLookupByName(name: string): Promise<DomainRef> {
    checkText('domain name', name);
    return this.rpc(RemoteProc.DOMAIN_LOOKUP_BY_NAME, (w) => writeString(w, name), readDomain);
  }

  /** Finds a domain by UUID; rejects with code 42 when absent. */
  async domainLookupByUUID(uuid: string): Promise<DomainRef> {
    const bytes = uuidToBytes(uuid);
    return this.rpc(
      RemoteProc.DOMAIN_LOOKUP_BY_UUID,
      (w) => w.fixedOpaque(bytes, VIR_UUID_BUFLEN),
      readDomain,
    );
  }

  /** Finds a running domain by id. */
  async domainLookupByID(id: number): Promise<DomainRef> {
    return this.rpc(RemoteProc.DOMAIN_LOOKUP_BY_ID, (w) => w.int(id, 'id'), readDomain);
  }

  /** Domain XML (DomainXMLFlags). */
  async domainGetXMLDesc(dom: DomainRef, flags = 0): Promise<string> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_XML_DESC,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      readString,
    );
  }

  async domainGetInfo(dom: DomainRef): Promise<DomainInfo> {
    return this.rpc(RemoteProc.DOMAIN_GET_INFO, (w) => writeDomain(w, dom), readDomainInfo);
  }

  /** State (virDomainState, see `DomainState`) and reason. */
  async domainGetState(dom: DomainRef, flags = 0): Promise<DomainStateInfo> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_STATE,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      (r) => ({ state: r.int(), reason: r.int() }),
    );
  }

  async domainIsActive(dom: DomainRef): Promise<boolean> {
    return this.rpc(
      RemoteProc.DOMAIN_IS_ACTIVE,
      (w) => writeDomain(w, dom),
      (r) => r.int() !== 0,
    );
  }

  /** Hard stop (DestroyFlags). */
  async domainDestroy(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_DESTROY_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  /** Asks the guest to shut down (ACPI or agent, per flags). */
  async domainShutdown(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SHUTDOWN_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  async domainReboot(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_REBOOT, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  /** Hard reset, like pressing the reset button. */
  async domainReset(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_RESET, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  async domainSuspend(dom: DomainRef): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SUSPEND, (w) => writeDomain(w, dom));
  }

  async domainResume(dom: DomainRef): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_RESUME, (w) => writeDomain(w, dom));
  }

  /** Sets memory in KiB (AffectFlags). */
  async domainSetMemory(dom: DomainRef, memoryKiB: number, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SET_MEMORY_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uhyper(memoryKiB, 'memoryKiB');
      w.uint(flags, 'flags');
    });
  }

  /** Sets the vCPU count (AffectFlags, plus 4 = MAXIMUM, 8 = GUEST). */
  async domainSetVcpus(dom: DomainRef, nvcpus: number, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SET_VCPUS_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(nvcpus, 'nvcpus');
      w.uint(flags, 'flags');
    });
  }

  private async deviceOp(proc: number, dom: DomainRef, xml: string, flags: number): Promise<void> {
    checkText('device XML', xml);
    await this.rpc(proc, (w) => {
      writeDomain(w, dom);
      writeString(w, xml);
      w.uint(flags, 'flags');
    });
  }

  /** Hot-plugs (or adds to the config) a device given as XML (AffectFlags). */
  async domainAttachDevice(dom: DomainRef, xml: string, flags = 0): Promise<void> {
    await this.deviceOp(RemoteProc.DOMAIN_ATTACH_DEVICE_FLAGS, dom, xml, flags);
  }

  /** Unplugs a device given as XML; completion arrives as a `device-removed` event. */
  async domainDetachDevice(dom: DomainRef, xml: string, flags = 0): Promise<void> {
    await this.deviceOp(RemoteProc.DOMAIN_DETACH_DEVICE_FLAGS, dom, xml, flags);
  }

  /** Changes a device in place (e.g. media change) (AffectFlags). */
  async domainUpdateDevice(dom: DomainRef, xml: string, flags = 0): Promise<void> {
    await this.deviceOp(RemoteProc.DOMAIN_UPDATE_DEVICE_FLAGS, dom, xml, flags);
  }

  // ---- statistics and jobs ----

  /** Balloon/memory statistics (virDomainMemoryStatTags). */
  async domainMemoryStats(dom: DomainRef, maxStats = 16, flags = 0): Promise<MemoryStat[]> {
    return this.rpc(
      RemoteProc.DOMAIN_MEMORY_STATS,
      (w) => {
        writeDomain(w, dom);
        w.uint(maxStats, 'maxStats');
        w.uint(flags, 'flags');
      },
      readMemoryStats,
    );
  }

  /** Block device counters for a disk target (e.g. `vda`) or source path. */
  async domainBlockStats(dom: DomainRef, disk: string): Promise<BlockStats> {
    checkText('disk', disk);
    return this.rpc(
      RemoteProc.DOMAIN_BLOCK_STATS,
      (w) => {
        writeDomain(w, dom);
        writeString(w, disk);
      },
      readBlockStats,
    );
  }

  /** Interface counters for a host-side device name or MAC. */
  async domainInterfaceStats(dom: DomainRef, device: string): Promise<InterfaceStats> {
    checkText('interface', device);
    return this.rpc(
      RemoteProc.DOMAIN_INTERFACE_STATS,
      (w) => {
        writeDomain(w, dom);
        writeString(w, device);
      },
      readInterfaceStats,
    );
  }

  async domainGetJobInfo(dom: DomainRef): Promise<DomainJobInfo> {
    return this.rpc(RemoteProc.DOMAIN_GET_JOB_INFO, (w) => writeDomain(w, dom), readJobInfo);
  }

  /**
   * Statistics of the domain's current job (or, with flags = 1 `COMPLETED`, the last one):
   * `type` is virDomainJobType; `params` hold e.g. `memory_processed`, `time_elapsed`.
   */
  async domainGetJobStats(dom: DomainRef, flags = 0): Promise<{ type: number; params: TypedParam[] }> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_JOB_STATS,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      (r) => ({ type: r.int(), params: readTypedParams(r, REMOTE_DOMAIN_JOB_STATS_MAX) }),
    );
  }

  async domainAbortJob(dom: DomainRef): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_ABORT_JOB, (w) => writeDomain(w, dom));
  }
  /**
   * Freezes the guest's filesystems through its agent (virDomainFSFreeze); `mountpoints`
   * empty: all of them. Resolves with how many filesystems were frozen.
   */
  async domainFSFreeze(dom: DomainRef, mountpoints: string[] = [], flags = 0): Promise<number> {
    for (const m of mountpoints) checkText('mount point', m);
    return this.rpc(
      RemoteProc.DOMAIN_FSFREEZE,
      (w) => {
        writeDomain(w, dom);
        w.array(mountpoints, REMOTE_DOMAIN_FSFREEZE_MOUNTPOINTS_MAX, writeString);
        w.uint(flags, 'flags');
      },
      (r) => r.int(),
    );
  }

  /** Thaws what `domainFSFreeze` froze (virDomainFSThaw); resolves with how many were thawed. */
  async domainFSThaw(dom: DomainRef, mountpoints: string[] = [], flags = 0): Promise<number> {
    for (const m of mountpoints) checkText('mount point', m);
    return this.rpc(
      RemoteProc.DOMAIN_FSTHAW,
      (w) => {
        writeDomain(w, dom);
        w.array(mountpoints, REMOTE_DOMAIN_FSFREEZE_MOUNTPOINTS_MAX, writeString);
        w.uint(flags, 'flags');
      },
      (r) => r.int(),
    );
  }

  /**
   * Dumps the domain's core to `to`, a path the daemon opens (virDomainCoreDumpWithFormat);
   * `dumpFormat` is virDomainCoreDumpFormat (0: raw ELF), `flags` virDomainCoreDumpFlags
   * (DumpFlags). Resolves when the file is written: the call lasts as long as the dump
   * (`timeoutMs`: default the client's call timeout, 0 none).
   */
  async domainCoreDumpWithFormat(
    dom: DomainRef,
    to: string,
    dumpFormat = 0,
    flags = 0,
    timeoutMs?: number,
  ): Promise<void> {
    checkText('dump path', to);
    await this.rpc(
      RemoteProc.DOMAIN_CORE_DUMP_WITH_FORMAT,
      (w) => {
        writeDomain(w, dom);
        writeString(w, to);
        w.uint(dumpFormat, 'dumpformat');
        w.uint(flags, 'flags');
      },
      undefined,
      timeoutMs,
    );
  }
}
