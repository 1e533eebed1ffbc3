/**
 * `spec.accessCredentials` admission: upstream's rules (one type, one source, one
 * propagationMethod, the cloud-init volume a method needs, qemuGuestAgent users) with the
 * exact field paths and messages, kubevirt-ts's Secret-name rule, qemuGuestAgent and
 * userPassword admitted as upstream admits them, for VMIs and VM templates.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type {
  AccessCredential,
  VirtualMachine,
  VirtualMachineInstance,
} from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { fixture } from '../../support/fixtures';

const config = createClusterConfig({}, { hostArchitecture: 'amd64' });

function errorsOf(creds: AccessCredential[], volumes?: (v: VirtualMachineInstance) => void) {
  const vmi = fixture<VirtualMachineInstance>('vmi-cloudinit-nocloud.yaml');
  vmi.spec.accessCredentials = creds;
  volumes?.(vmi);
  return admit(vmi as never, config)
    .errors.filter((e) => e.path.startsWith('spec.accessCredentials'))
    .map((e) => [e.path, e.message]);
}

const secret = (secretName: string) => ({ secret: { secretName } });

describe('accessCredentials validation', () => {
  it('accepts an SSH key from a Secret through noCloud, and through configDrive with such a volume', () => {
    expect(
      errorsOf([{ sshPublicKey: { source: secret('my-keys'), propagationMethod: { noCloud: {} } } }]),
    ).toEqual([]);
    const vmi = fixture<VirtualMachineInstance>('vmi-cloudinit-nocloud.yaml');
    const ci = vmi.spec.volumes!.find((v) => v.cloudInitNoCloud)!;
    ci.cloudInitConfigDrive = ci.cloudInitNoCloud;
    delete ci.cloudInitNoCloud;
    vmi.spec.accessCredentials = [
      { sshPublicKey: { source: secret('my-keys'), propagationMethod: { configDrive: {} } } },
    ];
    expect(admit(vmi as never, config).errors).toEqual([]);
  });

  it('needs the cloud-init volume of the propagation method', () => {
    expect(
      errorsOf([{ sshPublicKey: { source: secret('k'), propagationMethod: { noCloud: {} } } }], (v) => {
        v.spec.volumes = v.spec.volumes!.filter((x) => !x.cloudInitNoCloud);
        v.spec.domain.devices.disks = v.spec.domain.devices.disks!.filter((d) => d.name !== 'cloudinitdisk');
      }),
    ).toEqual([
      [
        'spec.accessCredentials[0].sshPublicKey.propagationMethod',
        'spec.accessCredentials[0] requires a noCloud volume to exist when the noCloud propagationMethod is in use.',
      ],
    ]);
  });

  it('needs exactly one propagationMethod, one source and one credential type', () => {
    expect(
      errorsOf([
        { sshPublicKey: { source: secret('k'), propagationMethod: { noCloud: {}, configDrive: {} } } },
      ]),
    ).toEqual([
      [
        'spec.accessCredentials[0].sshPublicKey.propagationMethod',
        'spec.accessCredentials[0] requires a configDrive volume to exist when the configDrive propagationMethod is in use.',
      ],
      [
        'spec.accessCredentials[0].sshPublicKey.propagationMethod',
        'spec.accessCredentials[0] must have exactly one propagationMethod set',
      ],
    ]);
    expect(errorsOf([{ sshPublicKey: { source: secret('k'), propagationMethod: {} } }])).toEqual([
      [
        'spec.accessCredentials[0].sshPublicKey.propagationMethod',
        'spec.accessCredentials[0] must have exactly one propagationMethod set',
      ],
    ]);
    expect(errorsOf([{ sshPublicKey: { source: {}, propagationMethod: { noCloud: {} } } }])).toEqual([
      [
        'spec.accessCredentials[0].sshPublicKey.source',
        'spec.accessCredentials[0] must have exactly one source set',
      ],
    ]);
    expect(errorsOf([{}])).toEqual([
      [
        'spec.accessCredentials[0]',
        'spec.accessCredentials[0] must have exactly one access credential type set',
      ],
    ]);
  });

  it('refuses a Secret name that cannot name the launcher pod volume <name>-access-cred', () => {
    const long = 'k'.repeat(52);
    expect(
      errorsOf([
        { sshPublicKey: { source: secret('Keys.Bad'), propagationMethod: { noCloud: {} } } },
        { sshPublicKey: { source: secret(long), propagationMethod: { noCloud: {} } } },
        { sshPublicKey: { source: secret('k'.repeat(51)), propagationMethod: { noCloud: {} } } },
      ]).map(([p, m]) => [p, m.replace(/ \(e\.g\. .*?regex used for validation is '[^']*'\)/, '')]),
    ).toEqual([
      [
        'spec.accessCredentials[0].sshPublicKey.source.secret.secretName',
        "spec.accessCredentials[0].sshPublicKey.source.secret.secretName 'Keys.Bad' a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (kubevirt-ts mounts the Secret in the launcher pod as volume '<name>-access-cred')",
      ],
      [
        'spec.accessCredentials[1].sshPublicKey.source.secret.secretName',
        `spec.accessCredentials[1].sshPublicKey.source.secret.secretName '${long}' must be no more than 51 characters (kubevirt-ts mounts the Secret in the launcher pod as volume '<name>-access-cred')`,
      ],
    ]);
  });

  it('admits qemuGuestAgent key propagation with users and userPassword through the agent, as upstream', () => {
    expect(
      errorsOf([
        {
          sshPublicKey: { source: secret('k'), propagationMethod: { qemuGuestAgent: { users: ['root'] } } },
        },
        { userPassword: { source: secret('pw'), propagationMethod: { qemuGuestAgent: {} } } },
      ]),
    ).toEqual([]);
    // A userPassword needs its one method, qemuGuestAgent.
    expect(errorsOf([{ userPassword: { source: secret('pw'), propagationMethod: {} } }])).toEqual([
      [
        'spec.accessCredentials[0].userPassword.propagationMethod',
        'spec.accessCredentials[0] must have exactly one propagationMethod set',
      ],
    ]);
    // Upstream's own rule for qemuGuestAgent still reports first.
    expect(
      errorsOf([
        { sshPublicKey: { source: secret('k'), propagationMethod: { qemuGuestAgent: { users: [] } } } },
      ])[0],
    ).toEqual([
      'spec.accessCredentials[0].sshPublicKey.propagationMethod.qemuGuestAgent.users',
      'spec.accessCredentials[0] requires at least one user to be present in the users list',
    ]);
  });

  it('checks a VM template at spec.template.spec.accessCredentials', () => {
    const vm = fixture<VirtualMachine>('vm-containerdisk.yaml');
    vm.spec.template.spec!.accessCredentials = [
      { sshPublicKey: { source: secret('k'), propagationMethod: { configDrive: {} } } },
    ];
    const errs = admit(vm as never, config).errors.map((e) => [e.path, e.message]);
    expect(errs).toContainEqual([
      'spec.template.spec.accessCredentials[0].sshPublicKey.propagationMethod',
      'spec.template.spec.accessCredentials[0] requires a configDrive volume to exist when the configDrive propagationMethod is in use.',
    ]);
    vm.spec.template.spec!.accessCredentials = [
      { sshPublicKey: { source: secret('k'), propagationMethod: { noCloud: {} } } },
    ];
    expect(admit(vm as never, config).errors).toEqual([]);
  });
});
