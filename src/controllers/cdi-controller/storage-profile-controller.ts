/**
 * The StorageProfile controller (CDI's storageprofile-controller): one StorageProfile per
 * StorageClass, named after it, whose status says the class, its provisioner, and the
 * claim properties (access and volume modes) a DataVolume's `spec.storage` gets: the
 * profile's own spec when set, else what this project knows of the provisioner (its own
 * CSI driver), else none (DataVolumes on that class must then say their access modes).
 */
import type { ClaimPropertySet, StorageProfile } from '../../api/generated/cdi/types';
import type { ControllerDeps, KeyReconciler, Lister, ReconcileResult } from '../common/controller-ports';
import { DRIVER_NAME, SHARED_PARAMETER } from '../common/csi-objects';
import { AlreadyExistsError, ConflictError, NotFoundError } from '../runtime/errors';
import { StorageClassType, StorageProfileType } from '../runtime/resources';
import { sameJson } from '../runtime/same-json';
import type { StorageClassInfo } from './claim-spec';

/** The claim properties of a known provisioner (first: what a DataVolume gets by default). */
export function knownClaimProperties(
  sc: StorageClassInfo & { parameters?: Record<string, string> },
): ClaimPropertySet[] {
  if (sc.provisioner !== DRIVER_NAME) return [];
  const shared = sc.parameters?.[SHARED_PARAMETER] === 'true';
  const modes: ClaimPropertySet['accessModes'] = shared
    ? ['ReadWriteMany', 'ReadWriteOnce']
    : ['ReadWriteOnce'];
  return [
    { accessModes: modes, volumeMode: 'Filesystem' },
    { accessModes: modes, volumeMode: 'Block' },
  ];
}

/**
 * The profile's clone strategy: its spec's, else `csi-clone` for this project's driver
 * (it clones volumes by reflink, as CDI's table of known provisioners says for CSI
 * drivers that clone well), else none.
 */
function cloneStrategyOf(profile: StorageProfile, sc: StorageClassInfo): StorageProfile['status'] {
  const own = profile.spec?.cloneStrategy;
  if (own) return { cloneStrategy: own };
  return sc.provisioner === DRIVER_NAME ? { cloneStrategy: 'csi-clone' } : {};
}

export interface StorageProfileControllerDeps extends ControllerDeps {
  storageClasses: Lister<StorageClassInfo & { parameters?: Record<string, string> }>;
  storageProfiles: Lister<StorageProfile>;
}

export class StorageProfileController implements KeyReconciler {
  constructor(private readonly d: StorageProfileControllerDeps) {}

  /** Keyed by the class's name (a profile's name is its class's). */
  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const sc = this.d.storageClasses.get(key);
    let profile = this.d.storageProfiles.get(key);
    if (!sc) {
      // A profile whose class is gone goes too (CDI deletes it).
      if (profile)
        await this.d.client.delete(StorageProfileType, key).catch((err) => {
          if (!(err instanceof NotFoundError)) throw err;
        });
      return undefined;
    }
    if (!profile) {
      profile = (await this.d.client
        .create(StorageProfileType, {
          apiVersion: 'cdi.kubevirt.io/v1beta1',
          kind: 'StorageProfile',
          metadata: { name: key, labels: { app: 'containerized-data-importer' } },
          spec: {},
        } as never)
        .catch((err) => {
          if (err instanceof ConflictError || err instanceof AlreadyExistsError) return undefined;
          throw err;
        })) as StorageProfile | undefined;
      if (!profile) return { requeueAfterMs: 1000 };
    }
    const own = profile.spec?.claimPropertySets ?? [];
    const status: StorageProfile['status'] = {
      storageClass: key,
      ...(sc.provisioner ? { provisioner: sc.provisioner } : {}),
      claimPropertySets: own.length > 0 ? own : knownClaimProperties(sc),
      ...cloneStrategyOf(profile, sc),
    };
    if (sameJson(profile.status ?? {}, status)) return undefined;
    try {
      await this.d.client.updateStatus(StorageProfileType, { ...profile, status } as never);
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return { requeueAfterMs: 500 };
      throw err;
    }
    return undefined;
  }
}

export { StorageClassType };
