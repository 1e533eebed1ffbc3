/**
 * The VMI controller's volume hotplug step: the hotplug fields of `status.volumeStatus`
 * and the attachment pods they call for (./hotplug-attachments), created next to the
 * launcher pod and deleted once their volume is unmounted from it.
 */
import type { VirtualMachineInstance, VolumeStatus } from '../../../api/generated/types';
import type { ControllerDeps } from '../../common/controller-ports';
import type { Pod } from '../../common/pod';
import { AlreadyExistsError, NotFoundError } from '../../runtime/errors';
import { PodType } from '../../runtime/resources';
import type { LauncherPodOptions } from '../services/pod-renderer';
import {
  attachmentPodChanges,
  HOTPLUG_VOLUME_ANNOTATION,
  hotplugVolumeStatus,
  renderAttachmentPod,
} from './hotplug-attachments';

/** How long a created attachment pod is trusted to show up in the cache. */
const CREATE_GRACE_MS = 15_000;

export class AttachmentPods {
  /** `<vmi uid>/<volume>` -> when its attachment pod was created (the cache may lag). */
  private readonly created = new Map<string, number>();

  constructor(
    private readonly d: Pick<ControllerDeps, 'client' | 'recorder'> & {
      podOptions: LauncherPodOptions;
      config: () => { configuration: { imagePullPolicy?: string } };
    },
  ) {}

  /** The volume statuses with the hotplug fields; creates and deletes attachment pods. */
  async sync(
    vmi: VirtualMachineInstance,
    launcher: Pod,
    attachments: Pod[],
    base: VolumeStatus[],
  ): Promise<VolumeStatus[]> {
    const status = hotplugVolumeStatus(vmi, attachments, base);
    const { create, remove } = attachmentPodChanges(vmi, attachments, status);
    const uid = vmi.metadata?.uid ?? '';
    const now = Date.now();
    for (const [k, t] of this.created) if (now - t > CREATE_GRACE_MS) this.created.delete(k);
    // A pod the cache shows needs no memo: dropped at once, a volume removed and added again
    // within the grace gets its new pod (else nothing would look again after the grace).
    for (const p of attachments)
      this.created.delete(`${uid}/${p.metadata?.annotations?.[HOTPLUG_VOLUME_ANNOTATION]}`);
    for (const v of create) {
      const key = `${uid}/${v.name}`;
      if (this.created.has(key)) continue;
      // Until the claim is known its volume mode is not (upstream waits for the claim too): a
      // pod mounting a block-mode claim as a filesystem would never start.
      const info = status.find((s) => s.name === v.name)?.persistentVolumeClaimInfo;
      if (!info) continue;
      const block = info.volumeMode === 'Block';
      const pod = renderAttachmentPod(
        vmi,
        launcher,
        v,
        this.d.podOptions.launcherImage,
        this.d.config().configuration.imagePullPolicy ?? 'IfNotPresent',
        block,
      );
      try {
        await this.d.client.create(PodType, pod as never);
        this.created.set(key, now);
        this.d.recorder.event(
          vmi,
          'Normal',
          'SuccessfulCreate',
          `Created attachment pod ${pod.metadata?.name}, for volume ${v.name}`,
        );
      } catch (err) {
        if (!(err instanceof AlreadyExistsError)) throw err;
      }
    }
    for (const p of remove) {
      try {
        await this.d.client.delete(PodType, p.metadata?.name ?? '', {
          namespace: p.metadata?.namespace,
          preconditions: { uid: p.metadata?.uid },
        });
        this.d.recorder.event(
          vmi,
          'Normal',
          'SuccessfulDelete',
          `Deleted attachment pod ${p.metadata?.name}, for volume ${p.metadata?.annotations?.[HOTPLUG_VOLUME_ANNOTATION]}`,
        );
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
    return status;
  }
}
