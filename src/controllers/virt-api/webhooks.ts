/**
 * virt-api's admission webhooks, by upstream's paths: mutating ones answer the defaults as a
 * JSONPatch, validating ones refuse with field-path causes. Both call the same pure
 * `admit` local mode calls, so a cluster and `kubevirt-ts up` accept the same objects.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import type { FieldError } from '../../api/errors';
import type { VirtualMachine, VirtualMachineInstanceMigration } from '../../api/generated/types';
import { admit, admitDefaults } from '../../api/validation/admission';
import { validateVmUnderSnapshotOrRestore } from '../../api/validation/snapshot';
import { inferMatchers } from '../common/instancetype-infer';
import { sameJson } from '../runtime/same-json';
import type { ObjectClient } from '../runtime/types';
import { type AdmissionRequest, type StatusCause, toCauses } from './admission-review';
import { CloneWebhooks } from './clone-webhooks';
import { ExportWebhooks } from './export-webhooks';
import { catalogForVm } from './instancetype-lookup';
import { type JsonPatchOperation, jsonPatch } from './json-patch';
import { migrationCreateErrors } from './migration-create';
import { validateMigrationPolicy } from './migration-policy';
import { nodeRestrictionErrors } from './node-restriction';
import { admitPodEviction } from './pod-eviction';
import { depthErrors, kindErrors } from './review-guard';
import { SnapshotWebhooks } from './snapshot-webhooks';

/** What a webhook decides. */
export type WebhookOutcome =
  | { allowed: true; patch?: JsonPatchOperation[]; warnings?: string[] }
  /** `code`/`message`: a refusal not about fields (the eviction webhook's 429). */
  | { allowed: false; causes: StatusCause[]; code?: number; message?: string };

/** What the webhooks need from their server. */
export interface WebhookContext {
  config: () => ClusterConfig;
  client: ObjectClient;
  /** Whether the request comes from one of KubeVirt's own service accounts. */
  privileged: (req: AdmissionRequest) => boolean;
  /** Whether the request comes from virt-handler's service account (./node-restriction). */
  fromHandler?: (req: AdmissionRequest) => boolean;
}

type Webhook = (req: AdmissionRequest, ctx: WebhookContext) => Promise<WebhookOutcome>;

const refuse = (errors: readonly FieldError[]): WebhookOutcome => ({
  allowed: false,
  causes: toCauses(errors),
});
const allow: WebhookOutcome = { allowed: true };

/** Refusals for what no webhook admits: objects nested too deep, or not of the kind served. */
function expectKind(req: AdmissionRequest, kinds: readonly string[]): FieldError[] {
  const deep = depthErrors(req);
  return deep.length ? deep : kindErrors(req, kinds);
}

/**
 * The object as admitted: of the request's kind (expectKind refused any other), with an
 * apiVersion (the API server sends both, but be sure).
 */
function objectOf(req: AdmissionRequest): Record<string, unknown> {
  const o = req.object ?? {};
  return {
    ...o,
    kind: req.kind.kind,
    apiVersion: o.apiVersion ?? (req.kind.group ? `${req.kind.group}/${req.kind.version}` : req.kind.version),
  };
}

/** The object admitted by `how`: defaulted only (the mutators) or defaulted and validated. */
async function admitted(req: AdmissionRequest, ctx: WebhookContext, how: typeof admit) {
  let object = objectOf(req);
  if (req.kind.kind === 'VirtualMachine') {
    // Upstream's VM mutator infers matchers naming a volume first (the validator finds none left).
    const inferred = await inferMatchers(ctx.client, object as unknown as VirtualMachine);
    if (inferred.errors.length > 0) return { object, errors: inferred.errors };
    object = inferred.vm as unknown as typeof object;
  }
  const instancetypes =
    req.kind.kind === 'VirtualMachine' ? await catalogForVm(ctx.client, object) : undefined;
  return how(object, ctx.config(), { instancetypes, kubevirtServiceAccount: ctx.privileged(req) });
}

/**
 * Defaults as a patch, without validating (the validator does, on the patched object, as
 * upstream's do); an object that cannot be defaulted is left to the validator to refuse.
 */
const mutate =
  (kinds: readonly string[]): Webhook =>
  async (req, ctx) => {
    const wrong = expectKind(req, kinds);
    if (wrong.length) return refuse(wrong);
    if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow;
    const { object, errors } = await admitted(req, ctx, admitDefaults);
    if (errors.length > 0) return allow;
    return { allowed: true, patch: jsonPatch(req.object, object) };
  };

type Lookup = (
  req: AdmissionRequest,
  ctx: WebhookContext,
  object: Record<string, unknown>,
) => Promise<FieldError[]>;

/**
 * Validates the object; `extra` runs before (rules on the request itself), `lookups`
 * after it is valid (rules that read other objects, as upstream's admitters do last).
 */
const validate =
  (
    kinds: readonly string[],
    extra?: (req: AdmissionRequest, ctx: WebhookContext) => FieldError[],
    lookups?: Lookup,
  ): Webhook =>
  async (req, ctx) => {
    const wrong = expectKind(req, kinds);
    if (wrong.length) return refuse(wrong);
    if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow;
    const more = extra?.(req, ctx) ?? [];
    if (more.length) return refuse(more);
    const { object, errors } = await admitted(req, ctx, admit);
    if (errors.length) return refuse(errors);
    const found = (await lookups?.(req, ctx, object as Record<string, unknown>)) ?? [];
    return found.length ? refuse(found) : allow;
  };

const same = (a: unknown, b: unknown) => sameJson(a ?? null, b ?? null);

/**
 * Upstream's VMI update rule: only KubeVirt's components change a VMI's spec (users go
 * through the VM, or hotplug subresources); everything else about the update is validated
 * as on create. The VMI has no status subresource, so a user who may update it could also
 * rewrite `status.migrationState`, which the handlers act on (where the migration stream
 * goes, whether it is encrypted): that too is the components' alone (a rule of ours).
 */
function vmiUpdate(req: AdmissionRequest, ctx: WebhookContext): FieldError[] {
  const node = nodeRestrictionErrors(req, ctx.config(), ctx.fromHandler?.(req) ?? false);
  if (node.length) return node;
  if (req.operation !== 'UPDATE' || ctx.privileged(req)) return [];
  const errs: FieldError[] = [];
  if (!same(req.object?.spec, req.oldObject?.spec))
    errs.push({ path: 'spec', message: 'update of VMI object is restricted', type: 'FieldValueForbidden' });
  if (!same(migrationStateOf(req.object), migrationStateOf(req.oldObject)))
    errs.push({
      path: 'status.migrationState',
      message: "only KubeVirt's components may change a VMI's migration state",
      type: 'FieldValueForbidden',
    });
  return errs;
}

const migrationStateOf = (o: Record<string, unknown> | undefined) =>
  (o?.status as { migrationState?: unknown } | undefined)?.migrationState;

/** upstream's vm-storage-status rules: no running-state (or volume) change under a snapshot or restore. */
function vmUpdate(req: AdmissionRequest): FieldError[] {
  if (req.operation !== 'UPDATE' || !req.oldObject) return [];
  return validateVmUnderSnapshotOrRestore(req.object ?? {}, req.oldObject);
}

/** A migration's spec never changes after create (upstream's migration update admitter). */
function migrationUpdate(req: AdmissionRequest): FieldError[] {
  if (req.operation !== 'UPDATE' || same(req.object?.spec, req.oldObject?.spec)) return [];
  return [
    { path: 'spec', message: "update of Migration object's spec is restricted", type: 'FieldValueForbidden' },
  ];
}

/** A new migration: its VMI exists, may migrate, and has no migration in flight. */
const migrationCreate: Lookup = async (req, ctx, object) => {
  if (req.operation !== 'CREATE') return [];
  const m = object as unknown as VirtualMachineInstanceMigration;
  // The API server names the namespace in the request (the object may lack it).
  const metadata = { ...m.metadata, namespace: m.metadata?.namespace ?? req.namespace };
  return migrationCreateErrors({ ...m, metadata }, ctx.client);
};

const policy: Webhook = async (req) => {
  const wrong = expectKind(req, ['MigrationPolicy']);
  if (wrong.length) return refuse(wrong);
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return allow;
  const errors = validateMigrationPolicy(req.object ?? {});
  return errors.length ? refuse(errors) : allow;
};

/** Webhooks by path. */
export const Webhooks: Readonly<Record<string, Webhook>> = {
  '/virtualmachineinstances-mutate': mutate(['VirtualMachineInstance']),
  '/virtualmachines-mutate': mutate(['VirtualMachine']),
  '/migration-mutate-create': mutate(['VirtualMachineInstanceMigration']),
  '/virtualmachineinstances-validate-create': validate(['VirtualMachineInstance']),
  '/virtualmachineinstances-validate-update': validate(['VirtualMachineInstance'], vmiUpdate),
  '/virtualmachines-validate': validate(['VirtualMachine'], vmUpdate),
  '/virtualmachinereplicaset-validate': validate(['VirtualMachineInstanceReplicaSet']),
  '/virtualmachinepool-validate': validate(['VirtualMachinePool']),
  '/migration-validate-create': validate(['VirtualMachineInstanceMigration'], undefined, migrationCreate),
  '/migration-validate-update': validate(['VirtualMachineInstanceMigration'], migrationUpdate),
  '/virtualmachineinstancetypes-validate': validate(['VirtualMachineInstancetype']),
  '/virtualmachineclusterinstancetypes-validate': validate(['VirtualMachineClusterInstancetype']),
  '/virtualmachinepreferences-validate': validate(['VirtualMachinePreference']),
  '/virtualmachineclusterpreferences-validate': validate(['VirtualMachineClusterPreference']),
  '/migration-policy-validate': policy,
  '/kubevirt-validate': validate(['KubeVirt']),
  '/launcher-eviction-validate': admitPodEviction,
  ...SnapshotWebhooks,
  ...CloneWebhooks,
  ...ExportWebhooks,
};
