/**
 * `virtctl image-upload`'s argument checks (upstream's parseArgs and its messages, and
 * the refusals of what kubevirt-ts does not build), and the proxy URL paths it posts to.
 */
import { describe, expect, it } from 'vitest';
import { parseUploadArgs } from '../../../src/cli/commands/virtctl/image-upload';
import { uploadUrl } from '../../../src/cli/commands/virtctl/image-upload-transfer';

const f = (o: Record<string, unknown> = {}) => ({ waitSecs: '300', retry: '5', imagePath: 'd.qcow2', ...o });
const err = (args: string[], o: Record<string, unknown>) => {
  try {
    parseUploadArgs(args, f(o) as never);
    return 'accepted';
  } catch (e) {
    return (e as Error).message;
  }
};

describe('virtctl image-upload arguments', () => {
  it('dv and pvc with a name; the deprecated --pvc-name, --pvc-size and --block-volume', () => {
    expect(parseUploadArgs(['dv', 'disk'], f() as never)).toEqual({
      kind: 'dv',
      name: 'disk',
      imagePath: 'd.qcow2',
    });
    expect(parseUploadArgs(['PVC', 'disk'], f({ volumeMode: 'filesystem' }) as never)).toEqual({
      kind: 'pvc',
      name: 'disk',
      imagePath: 'd.qcow2',
      volumeMode: 'filesystem',
    });
    expect(parseUploadArgs([], f({ pvcName: 'old', blockVolume: true }) as never)).toEqual({
      kind: 'pvc',
      name: 'old',
      imagePath: 'd.qcow2',
      volumeMode: 'block',
    });
  });

  it('refuses as upstream does, and what is not built with a reason', () => {
    expect(err(['dv'], {})).toBe('expecting two args');
    expect(err(['vm', 'x'], {})).toBe('invalid resource type vm');
    expect(err(['dv', 'x'], { imagePath: undefined })).toBe(
      'either image-path or archive-path must be provided',
    );
    expect(err(['dv', 'x'], { volumeMode: 'tape' })).toBe(
      "Invalid volume mode 'tape'. Valid values are 'block' and 'filesystem'.",
    );
    expect(err(['dv', 'x'], { size: '1Gi', pvcSize: '2Gi' })).toBe(
      '--pvc-size and --size can not be specified at the same time',
    );
    expect(err(['dv', 'x'], { size: 'lots' })).toMatch(/^validation failed for size=lots/);
    expect(err(['dv', 'x'], { accessMode: 'ReadOnlyMany' })).toMatch(/^cannot upload to a readonly volume/);
    expect(err(['dv', 'x'], { archivePath: 'a.tar' })).toMatch(
      /^--archive-path: archive uploads .* not supported/,
    );
    expect(err(['dv', 'x'], { datasource: true })).toMatch(/^--datasource: .* not supported/);
    expect(err(['dv', 'x'], { defaultPreference: 'p', noCreate: true })).toBe(
      '--default-instancetype and --default-preference cannot be used with --no-create',
    );
    expect(err(['x'], { pvcName: 'p' })).toBe('cannot use --pvc-name and args');
  });

  it('the upload paths on the proxy URL', () => {
    expect(uploadUrl('https://h:18443', '/v1beta1/upload-async').toString()).toBe(
      'https://h:18443/v1beta1/upload-async',
    );
    expect(uploadUrl('https://h/prefix/', '/v1beta1/upload').toString()).toBe(
      'https://h/prefix/v1beta1/upload',
    );
    expect(uploadUrl('https://h/v1beta1/upload', '/v1beta1/upload').toString()).toBe(
      'https://h/v1beta1/upload',
    );
  });
});
