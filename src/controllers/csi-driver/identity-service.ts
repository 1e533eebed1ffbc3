/**
 * The CSI Identity service: the driver's name and version, its plugin capabilities
 * (a controller service, topology, online and offline expansion), and readiness (Probe:
 * the pool answers statfs).
 */

import { status } from '@grpc/grpc-js';
import { DRIVER_NAME } from '../common/csi-objects';
import { CsiError } from './errors';
import {
  PluginCapability_VolumeExpansion_Type as Expansion,
  type GetPluginCapabilitiesResponse,
  type GetPluginInfoResponse,
  type ProbeResponse,
  PluginCapability_Service_Type as ServiceType,
} from './generated/csi/csi';
import type { Pool } from './pool';

/** The driver's name: the CSIDriver object's and StorageClasses' `provisioner`. */
export { DRIVER_NAME };

/** Options of {@link IdentityService}. */
export interface IdentityServiceOptions {
  pool: Pool;
  version: string;
}

/** The Identity service's RPCs. */
export class IdentityService {
  constructor(private readonly o: IdentityServiceOptions) {}

  async getPluginInfo(): Promise<GetPluginInfoResponse> {
    return { name: DRIVER_NAME, vendorVersion: this.o.version, manifest: {} };
  }

  async getPluginCapabilities(): Promise<GetPluginCapabilitiesResponse> {
    return {
      capabilities: [
        { service: { type: ServiceType.CONTROLLER_SERVICE } },
        { service: { type: ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS } },
        { volumeExpansion: { type: Expansion.ONLINE } },
        { volumeExpansion: { type: Expansion.OFFLINE } },
      ],
    };
  }

  async probe(): Promise<ProbeResponse> {
    try {
      await this.o.pool.space();
    } catch (err) {
      throw new CsiError(
        status.FAILED_PRECONDITION,
        `the storage pool ${this.o.pool.dir} does not answer: ${err}`,
      );
    }
    return { ready: true };
  }
}
