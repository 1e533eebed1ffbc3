/**
 * Sanity rules for a KubeVirt CR's `spec.configuration` (upstream's `validateConfig` in
 * pkg/virt-config): values the rest of the system divides by or matches against must make
 * sense. Upstream keeps the last valid configuration when a new one breaks these rules;
 * here they are reported as field errors so a user sees them before anything runs.
 */
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { KubeVirtConfiguration } from '../generated/types';
import { validateMigrationConfiguration } from './migration-configuration';
import { isValidQuantity } from './quantity';
import { validateRestClientConfiguration } from './rest-client';
import { validateTlsConfiguration } from './tls-configuration';

const interfaces = ['bridge', 'masquerade'];
const evictionStrategies = ['LiveMigrate', 'LiveMigrateIfPossible', 'None', 'External'];
const rolloutStrategies = ['Stage', 'LiveUpdate'];
const pullPolicies = ['Always', 'IfNotPresent', 'Never'];

/** Problems with a KubeVirt configuration; `field` is where it sits (`spec.configuration`). */
export function validateKubeVirtConfiguration(
  cfg: KubeVirtConfiguration | undefined,
  field: FieldPath = FieldPath.of('spec', 'configuration'),
): FieldError[] {
  if (!cfg) return [];
  const errs: FieldError[] = [];
  const dev = cfg.developerConfiguration;
  const dp = field.child('developerConfiguration');
  if (dev?.memoryOvercommit !== undefined && dev.memoryOvercommit <= 0) {
    errs.push(
      fieldError(
        dp.child('memoryOvercommit'),
        `Invalid value: ${dev.memoryOvercommit}: must be greater than 0`,
      ),
    );
  }
  if (dev?.cpuAllocationRatio !== undefined && dev.cpuAllocationRatio <= 0) {
    errs.push(
      fieldError(
        dp.child('cpuAllocationRatio'),
        `Invalid value: ${dev.cpuAllocationRatio}: must be greater than 0`,
      ),
    );
  }
  const tol = dev?.pvcTolerateLessSpaceUpToPercent;
  if (tol !== undefined && (tol < 0 || tol > 100)) {
    errs.push(
      fieldError(
        dp.child('pvcTolerateLessSpaceUpToPercent'),
        `Invalid value: ${tol}: must be in range between 0 and 100`,
      ),
    );
  }
  if (cfg.cpuRequest !== undefined && !isValidQuantity(cfg.cpuRequest)) {
    errs.push(fieldError(field.child('cpuRequest'), `Invalid value: "${cfg.cpuRequest}": not a quantity`));
  }
  if (cfg.memBalloonStatsPeriod !== undefined && cfg.memBalloonStatsPeriod < 0) {
    errs.push(
      fieldError(
        field.child('memBalloonStatsPeriod'),
        `Invalid value: ${cfg.memBalloonStatsPeriod}: must not be negative`,
      ),
    );
  }
  const iface = cfg.network?.defaultNetworkInterface;
  if (iface !== undefined && !interfaces.includes(iface)) {
    errs.push(
      fieldError(
        field.child('network', 'defaultNetworkInterface'),
        `Unsupported value: "${iface}": supported values: "${interfaces.join('", "')}"`,
        'FieldValueNotSupported',
      ),
    );
  }
  if (cfg.evictionStrategy !== undefined && !evictionStrategies.includes(cfg.evictionStrategy)) {
    errs.push(
      fieldError(
        field.child('evictionStrategy'),
        `Unsupported value: "${cfg.evictionStrategy}": supported values: "${evictionStrategies.join('", "')}"`,
        'FieldValueNotSupported',
      ),
    );
  }
  if (cfg.vmRolloutStrategy !== undefined && !rolloutStrategies.includes(cfg.vmRolloutStrategy)) {
    errs.push(
      fieldError(
        field.child('vmRolloutStrategy'),
        `Unsupported value: "${cfg.vmRolloutStrategy}": supported values: "${rolloutStrategies.join('", "')}"`,
        'FieldValueNotSupported',
      ),
    );
  }
  if (cfg.imagePullPolicy !== undefined && !pullPolicies.includes(cfg.imagePullPolicy)) {
    errs.push(
      fieldError(
        field.child('imagePullPolicy'),
        `Unsupported value: "${cfg.imagePullPolicy}": supported values: "${pullPolicies.join('", "')}"`,
        'FieldValueNotSupported',
      ),
    );
  }
  const machinePatterns: [FieldPath, string[] | undefined][] = [
    [field.child('emulatedMachines'), cfg.emulatedMachines],
  ];
  for (const arch of ['amd64', 'arm64', 'ppc64le', 's390x'] as const) {
    machinePatterns.push([
      field.child('architectureConfiguration', arch, 'emulatedMachines'),
      cfg.architectureConfiguration?.[arch]?.emulatedMachines,
    ]);
  }
  for (const [path, patterns] of machinePatterns) {
    (patterns ?? []).forEach((p, i) => {
      // Go's filepath.Match rejects unterminated character classes.
      if (/\[[^\]]*$/.test(p) || /\[\]/.test(p)) {
        errs.push(fieldError(path.index(i), `Invalid value: "${p}": not a valid machine type pattern`));
      }
    });
  }
  const lu = cfg.liveUpdateConfiguration;
  if (lu?.maxHotplugRatio !== undefined && lu.maxHotplugRatio < 1) {
    errs.push(
      fieldError(
        field.child('liveUpdateConfiguration', 'maxHotplugRatio'),
        `Invalid value: ${lu.maxHotplugRatio}: must be at least 1`,
      ),
    );
  }
  errs.push(...validateSeccompConfiguration(cfg, field.child('seccompConfiguration')));
  errs.push(...validateTlsConfiguration(cfg.tlsConfiguration, field.child('tlsConfiguration')));
  errs.push(...validateMigrationConfiguration(cfg.migrations, field.child('migrations')));
  errs.push(...validateRestClientConfiguration(cfg, field));
  // Log verbosity (klog's --v): the components take it as their level, so whole numbers 0 or more.
  const lv = dev?.logVerbosity;
  const lp = dp.child('logVerbosity');
  const badVerbosity = (v: unknown) => v !== undefined && !(Number.isInteger(v) && (v as number) >= 0);
  for (const k of ['virtAPI', 'virtController', 'virtHandler', 'virtLauncher', 'virtOperator'] as const) {
    if (badVerbosity(lv?.[k]))
      errs.push(
        fieldError(
          lp.child(k),
          `Invalid value: ${JSON.stringify(lv?.[k])}: must be a whole number 0 or more`,
        ),
      );
  }
  for (const [node, v] of Object.entries(lv?.nodeVerbosity ?? {})) {
    if (badVerbosity(v))
      errs.push(
        fieldError(
          lp.child('nodeVerbosity').child(node),
          `Invalid value: ${JSON.stringify(v)}: must be a whole number 0 or more`,
        ),
      );
  }
  // Instance types are always referenced through ControllerRevisions (upstream's default);
  // the expand policies (rewriting the VM) are not built.
  const policy = cfg.instancetype?.referencePolicy;
  if (policy !== undefined && policy !== 'reference') {
    errs.push(
      fieldError(
        field.child('instancetype', 'referencePolicy'),
        `Unsupported value: ${JSON.stringify(policy)}: kubevirt-ts supports only "reference" (upstream's "expand" and "expandAll" are not built)`,
      ),
    );
  }
  return errs;
}

/** upstream's validateSeccompConfiguration: a profile is named, and only one kind of it. */
function validateSeccompConfiguration(cfg: KubeVirtConfiguration, field: FieldPath): FieldError[] {
  const vmi = cfg.seccompConfiguration?.virtualMachineInstanceProfile;
  if (!vmi) return [];
  const cp = field.child('virtualMachineInstanceProfile', 'customProfile');
  const custom = vmi.customProfile;
  if (!custom) return [fieldError(cp, `${cp} needs to be set`)];
  const errs: FieldError[] = [];
  const local = cp.child('localhostProfile');
  const rd = cp.child('runtimeDefaultProfile');
  if (custom.localhostProfile !== undefined && custom.runtimeDefaultProfile) {
    errs.push(fieldError(local, `${local} cannot be set when ${rd} is set`));
    errs.push(fieldError(rd, `${rd} cannot be set when ${local} is set`));
  }
  // The kubelet reads it under its seccomp directory: a relative path that stays there.
  const p = custom.localhostProfile;
  if (p !== undefined && (!/^[A-Za-z0-9._/-]+$/.test(p) || p.startsWith('/') || p.split('/').includes('..')))
    errs.push(
      fieldError(
        local,
        `Invalid value: ${JSON.stringify(p)}: a relative path under the kubelet's seccomp directory`,
      ),
    );
  return errs;
}
