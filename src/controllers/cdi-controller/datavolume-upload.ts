/**
 * An upload DataVolume's status (CDI's datavolume upload-controller updateStatusPhase):
 * read from its claim's annotations, which the upload controller keeps from the upload
 * pod: UploadScheduled while the pod is pending or not ready, UploadReady once it is ready
 * to receive, Succeeded once the image is on the claim. A failed upload (the pod restarted
 * with an error) keeps the phase and puts the error in the Running condition.
 */
import type { DataVolume } from '../../api/generated/cdi/types';
import { POD_PHASE_ANNOTATION, POD_READY_ANNOTATION, UPLOAD_ERROR_ANNOTATION } from '../common/cdi-upload';
import type { WantedStatus } from './datavolume-status';

/** CDI's upload phases and event reasons. */
export const UploadPhase = {
  UploadScheduled: 'UploadScheduled',
  UploadReady: 'UploadReady',
  Succeeded: 'Succeeded',
} as const;

/** The status to write and the event that goes with a change. */
export interface UploadStatusStep {
  status: WantedStatus;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** The DataVolume's status from its claim (`base` gives the common fields of a phase). */
export function uploadStatus(
  dv: DataVolume,
  claim: { metadata?: { annotations?: Record<string, string> } },
  base: (phase: string) => WantedStatus,
): UploadStatusStep {
  const name = dv.metadata?.name ?? '';
  const ann = claim.metadata?.annotations ?? {};
  const phase = ann[POD_PHASE_ANNOTATION];
  const error = ann[UPLOAD_ERROR_ANNOTATION];
  if (phase === 'Succeeded')
    return {
      status: {
        ...base(UploadPhase.Succeeded),
        progress: '100.0%',
        ready: { status: 'True' },
        running: { status: 'False', reason: 'Completed' },
      },
      type: 'Normal',
      reason: 'UploadSucceeded',
      message: `Successfully uploaded into ${name}`,
    };
  const running = phase === 'Running';
  const ready = running && ann[POD_READY_ANNOTATION] === 'true';
  const step = ready
    ? { reason: 'UploadReady', message: `Upload into ${name} ready` }
    : { reason: 'UploadScheduled', message: `Upload into ${name} scheduled` };
  return {
    status: {
      ...base(ready ? UploadPhase.UploadReady : UploadPhase.UploadScheduled),
      running: error
        ? { status: running ? 'True' : 'False', reason: 'Error', message: error }
        : running
          ? { status: 'True', reason: 'Pod is running' }
          : { status: 'False', reason: 'Pending' },
    },
    type: 'Normal',
    ...step,
  };
}
