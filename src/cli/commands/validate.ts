/**
 * `kubevirt-ts validate [--feature-gates A,B] [--config kubevirt-cr.yaml] [--expand] FILE...`:
 * admits every object of the given manifests as the API server and KubeVirt's webhooks
 * would, printing each object after defaulting (YAML, to stdout) or its errors one per
 * line as `<kind>/<name>: <field.path>: <message>` (to stderr). Exits non-zero when any
 * file cannot be loaded or any object is invalid.
 */
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { type ClusterConfig, createClusterConfig } from '../../api/config/cluster-config';
import { unknownFeatureGates } from '../../api/config/feature-gates';
import { validateKubeVirtConfiguration } from '../../api/config/validate-configuration';
import { formatFieldError } from '../../api/errors';
import type { KubeVirt } from '../../api/generated/types';
import { createInstancetypeCatalog } from '../../api/instancetype/catalog';
import { type LoadResult, loadManifestFile } from '../../api/manifest/load';
import { type ApiObject, admit } from '../../api/validation/admission';
import { terminalText } from '../terminal-text';

/** Options of the validate command. */
export interface ValidateOptions {
  /** Comma-separated feature gates to enable on top of the configuration's. */
  featureGates?: string;
  /** A manifest holding the KubeVirt CR whose `spec.configuration` applies. */
  config?: string;
  /** Expand VMs' instance types and preferences found among the inputs before validating. */
  expand?: boolean;
}

/** What the command prints and whether everything was valid. */
export interface ValidateResult {
  /** Defaulted objects as a multi-document YAML stream. */
  output: string;
  /** Error lines. */
  errors: string[];
  /** Warning lines. */
  warnings: string[];
  ok: boolean;
}

/** Escapes control characters and bidi overrides and cuts long values (see terminalText). */
function safe(text: string): string {
  return terminalText(text);
}

async function loadConfig(
  file: string,
  gates: string[],
): Promise<{ config?: ClusterConfig; errors: string[]; warnings?: string[] }> {
  const loaded = await loadManifestFile(file);
  if (loaded.errors.length > 0) return { errors: loaded.errors.map((e) => safe(e.message)) };
  const kvs = loaded.objects.filter((o) => o.kind === 'KubeVirt');
  if (kvs.length !== 1) {
    return { errors: [`${safe(file)}: --config needs exactly one KubeVirt object, found ${kvs.length}`] };
  }
  const kv = kvs[0].object as KubeVirt;
  const invalid = validateKubeVirtConfiguration(kv.spec?.configuration);
  if (invalid.length > 0) {
    const name = safe(kv.metadata?.name ?? '');
    return { errors: invalid.map((e) => `${safe(file)}: ${safe(formatFieldError('KubeVirt', name, e))}`) };
  }
  const listed = kv.spec?.configuration?.developerConfiguration?.featureGates ?? [];
  return {
    config: createClusterConfig(kv.spec?.configuration ?? {}, { featureGates: gates }),
    errors: [],
    warnings: unknownFeatureGates(listed).map(
      (g) => `warning: ${safe(file)}: unknown feature gate ${safe(g)}`,
    ),
  };
}

/** Admits every object in `files`; never throws for bad input. */
export async function validateFiles(files: string[], opts: ValidateOptions = {}): Promise<ValidateResult> {
  const result: ValidateResult = { output: '', errors: [], warnings: [], ok: true };
  const gates = (opts.featureGates ?? '')
    .split(',')
    .map((g) => g.trim())
    .filter(Boolean);
  for (const g of unknownFeatureGates(gates))
    result.warnings.push(`warning: unknown feature gate ${safe(g)}`);
  let config = createClusterConfig({}, { featureGates: gates });
  if (opts.config) {
    const c = await loadConfig(opts.config, gates);
    if (!c.config) return { ...result, errors: c.errors, ok: false };
    config = c.config;
    result.warnings.push(...(c.warnings ?? []));
  }
  if (files.length === 0) return { ...result, errors: ['no FILE given'], ok: false };

  const loaded: LoadResult[] = [];
  for (const file of files) {
    const r = await loadManifestFile(file);
    loaded.push(r);
    result.errors.push(...r.errors.map((e) => safe(e.message)));
    result.warnings.push(...r.warnings.map((w) => `warning: ${safe(w.message)}`));
  }
  const catalog = opts.expand
    ? createInstancetypeCatalog(loaded.flatMap((r) => r.objects.map((o) => o.object)))
    : undefined;
  const docs: string[] = [];
  for (const r of loaded) {
    for (const o of r.objects) {
      if (!o.known) {
        docs.push(stringify(o.object));
        continue;
      }
      const object = o.object as unknown as ApiObject;
      const admission = admit(object, config, { instancetypes: catalog });
      if (admission.errors.length > 0) {
        const name = safe(String(object.metadata?.name ?? ''));
        result.errors.push(...admission.errors.map((e) => safe(formatFieldError(o.kind, name, e))));
      } else {
        docs.push(stringify(admission.object));
      }
    }
  }
  result.output = docs.map((d) => `---\n${d}`).join('');
  result.ok = result.errors.length === 0;
  return result;
}

/** Registers `validate` on the kubevirt-ts program. */
export function registerValidateCommand(program: Command): void {
  program
    .command('validate')
    .description('default and validate kubevirt.io manifests as admission would; print them or their errors')
    .argument('<file...>', 'YAML or JSON manifests')
    .option('--feature-gates <gates>', 'comma-separated feature gates to enable')
    .option('--config <file>', 'manifest with the KubeVirt CR whose spec.configuration applies')
    .option('--expand', 'expand instance types and preferences found among the inputs into VMs')
    .action(async (files: string[], opts: ValidateOptions) => {
      const result = await validateFiles(files, opts);
      process.stdout.write(result.output);
      for (const line of [...result.warnings, ...result.errors]) process.stderr.write(`${line}\n`);
      if (!result.ok) process.exitCode = 1;
    });
}
