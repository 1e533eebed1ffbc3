/**
 * The examples the README's cluster quick start applies: the KubeVirt CR is the one the
 * operator acts on (kubevirt/kubevirt, emulation on), and the VMs it boots are admitted
 * under that CR's configuration, as virt-api's webhooks would.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { validateFiles } from '../../src/cli/commands/validate';

const examples = join(__dirname, '../../examples');

describe('cluster examples', () => {
  it('kubevirt-cr.yaml is the KubeVirt CR kubevirt/kubevirt with useEmulation', () => {
    const cr = parse(readFileSync(join(examples, 'kubevirt-cr.yaml'), 'utf8'));
    expect(cr).toEqual({
      apiVersion: 'kubevirt.io/v1',
      kind: 'KubeVirt',
      metadata: { name: 'kubevirt', namespace: 'kubevirt' },
      spec: { configuration: { developerConfiguration: { useEmulation: true } } },
    });
  });

  it('the containerDisk VMs validate under that CR, the ssh one with its accessCredentials key', async () => {
    const r = await validateFiles(
      [join(examples, 'vm-tiny-containerdisk.yaml'), join(examples, 'vm-tiny-cd-ssh.yaml')],
      { config: join(examples, 'kubevirt-cr.yaml') },
    );
    expect(r.errors).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.output).toContain('name: vm-tiny-ssh');
    expect(r.output).toContain('secretName: my-ssh-key');
    expect(r.output).toContain('image: localhost/kubevirt-ts/tiny-guest-containerdisk:latest');
  });

  it('the DataVolume VM validates under that CR, its template a Block registry import', async () => {
    const r = await validateFiles([join(examples, 'vm-tiny-datavolume.yaml')], {
      config: join(examples, 'kubevirt-cr.yaml'),
    });
    expect(r.errors).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.output).toContain('url: docker://localhost/kubevirt-ts/tiny-guest-containerdisk:latest');
    expect(r.output).toContain('volumeMode: Block');
  });
});
