/**
 * `spec.accessCredentials` rules: upstream's (VMI create admitter, validateAccessCredentials:
 * one credential type per entry, exactly one source and one propagationMethod, the
 * cloud-init volume a noCloud/configDrive method needs, users for qemuGuestAgent) and
 * kubevirt-ts's own: the Secret's name becomes a path segment and the launcher pod's volume
 * `<name>-access-cred`, so it must be a DNS label short enough for that. qemuGuestAgent
 * keys and userPassword are propagated by the launcher's guest-agent credential sync
 * (controllers/virt-launcher/agent-credentials.ts).
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { AccessCredentialSecretSource, VirtualMachineInstanceSpec } from '../generated/types';
import { isDNS1123Label } from './names';

const arrayLenMax = 256;
/** The pod volume name `<secret>-access-cred` must stay a DNS label (63 characters). */
const SECRET_NAME_MAX = 63 - '-access-cred'.length;

function checkSecretName(p: FieldPath, secret: AccessCredentialSecretSource | undefined): FieldError[] {
  if (!secret) return [];
  const np = p.child('secret', 'secretName');
  const name = secret.secretName;
  if (!name) return [fieldError(np, `${np} is required`, 'FieldValueRequired')];
  const problems = isDNS1123Label(name);
  if (name.length > SECRET_NAME_MAX) problems.push(`must be no more than ${SECRET_NAME_MAX} characters`);
  if (!problems.length) return [];
  return [
    fieldError(
      np,
      `${np} '${name}' ${problems.join(', ')} (kubevirt-ts mounts the Secret in the launcher pod as volume '<name>-access-cred')`,
    ),
  ];
}

/** Every accessCredentials error of `spec` (at `field`, e.g. `spec` or `spec.template.spec`). */
export function validateAccessCredentials(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const creds = spec.accessCredentials ?? [];
  const ap = field.child('accessCredentials');
  if (creds.length > arrayLenMax)
    return [fieldError(ap, `${ap} list exceeds the ${arrayLenMax} element limit in length`)];
  const errs: FieldError[] = [];
  const hasNoCloud = (spec.volumes ?? []).some((v) => v.cloudInitNoCloud);
  const hasConfigDrive = (spec.volumes ?? []).some((v) => v.cloudInitConfigDrive);
  creds.forEach((cred, idx) => {
    const p = ap.index(idx);
    let count = 0;
    const ssh = cred.sshPublicKey;
    if (ssh) {
      count++;
      const pm = ssh.propagationMethod ?? {};
      const pmPath = p.child('sshPublicKey', 'propagationMethod');
      let methods = 0;
      // Each cloud-init method needs its cloud-init volume (upstream's message for both).
      for (const [method, present] of [
        ['noCloud', hasNoCloud],
        ['configDrive', hasConfigDrive],
      ] as const) {
        if (!pm[method]) continue;
        methods++;
        if (!present) {
          errs.push(
            fieldError(
              pmPath,
              `${p} requires a ${method} volume to exist when the ${method} propagationMethod is in use.`,
            ),
          );
        }
      }
      if (pm.qemuGuestAgent) {
        methods++;
        if (!pm.qemuGuestAgent.users?.length) {
          errs.push(
            fieldError(
              pmPath.child('qemuGuestAgent', 'users'),
              `${p} requires at least one user to be present in the users list`,
            ),
          );
        }
      }
      if (!ssh.source?.secret) {
        errs.push(fieldError(p.child('sshPublicKey', 'source'), `${p} must have exactly one source set`));
      }
      errs.push(...checkSecretName(p.child('sshPublicKey', 'source'), ssh.source?.secret));
      if (methods !== 1) errs.push(fieldError(pmPath, `${p} must have exactly one propagationMethod set`));
    }
    const up = cred.userPassword;
    if (up) {
      count++;
      if (!up.source?.secret)
        errs.push(fieldError(p.child('userPassword', 'source'), `${p} must have exactly one source set`));
      errs.push(...checkSecretName(p.child('userPassword', 'source'), up.source?.secret));
      if (!up.propagationMethod?.qemuGuestAgent) {
        errs.push(
          fieldError(
            p.child('userPassword', 'propagationMethod'),
            `${p} must have exactly one propagationMethod set`,
          ),
        );
      }
    }
    if (count !== 1) errs.push(fieldError(p, `${p} must have exactly one access credential type set`));
  });
  return errs;
}
