/**
 * What the local pod runtime runs for a pod: its compute container's command, mapped to a
 * program on this host by the command's first word, and its environment (the runtime's
 * own, the container's values and downward-API fieldRefs, and the pod's mounts for the
 * launcher's path map), as a container runtime would set them up.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MOUNTS_ENV } from '../../common/path-map';
import type { Pod } from '../../common/pod';
import { objectKey } from '../../runtime/resources';
import type { KubeObject } from '../../runtime/types';

/** This package's CLI entry (`dist/cli/kubevirt-ts.js`), found from this module's location. */
export function defaultCliEntry(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'dist', 'cli', 'kubevirt-ts.js'))) {
      return join(dir, 'dist', 'cli', 'kubevirt-ts.js');
    }
    dir = dirname(dir);
  }
  return resolve('dist/cli/kubevirt-ts.js');
}

/**
 * The argv of `pod`'s first container: its command and args with the first word looked up
 * in `commands` (default: `kubevirt-ts` -> `node <this package>/dist/cli/kubevirt-ts.js`).
 * Throws naming the pod and field when there is no command or it is not a known one.
 */
export function containerArgv(pod: Pod, commands?: Record<string, string[]>): string[] {
  const c = pod.spec?.containers?.[0];
  const cmd = [...(c?.command ?? []), ...(c?.args ?? [])];
  if (cmd.length === 0)
    throw new Error(`Pod ${objectKey(pod as KubeObject)}: spec.containers[0] has no command`);
  return commandArgv(pod, 'spec.containers[0].command[0]', cmd, commands);
}

/**
 * `cmd` with its first word looked up in `commands` (the same table as the container's
 * command), for a command run in the container such as an exec probe's; throws naming
 * `field` when the word is not a known command.
 */
export function commandArgv(
  pod: Pod,
  field: string,
  cmd: string[],
  commands?: Record<string, string[]>,
): string[] {
  const known = commands ?? { 'kubevirt-ts': [process.execPath, defaultCliEntry()] };
  const mapped = cmd.length ? known[cmd[0]] : undefined;
  if (!mapped) {
    throw new Error(
      `Pod ${objectKey(pod as KubeObject)}: ${field}: ${JSON.stringify(cmd[0] ?? '')} is not a command this runtime runs (known: ${Object.keys(known).join(', ')})`,
    );
  }
  return [...mapped, ...cmd.slice(1)];
}

/**
 * The environment of `pod`'s first container: PATH and HOME of this process, `base` (the
 * runtime's additions), the pod's mounts in {@link MOUNTS_ENV}, then the container's `env`
 * (plain values and the fieldRefs a pod's downward API offers here).
 */
export function containerEnv(
  pod: Pod,
  base: Record<string, string> | undefined,
  mounts: Record<string, string>,
): NodeJS.ProcessEnv {
  const fields: Record<string, string | undefined> = {
    'metadata.name': pod.metadata?.name,
    'metadata.namespace': pod.metadata?.namespace,
    'metadata.uid': pod.metadata?.uid,
    'spec.nodeName': pod.spec?.nodeName,
  };
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...base,
    [MOUNTS_ENV]: JSON.stringify(mounts),
  };
  for (const e of pod.spec?.containers?.[0]?.env ?? []) {
    const v = e.value ?? (e.valueFrom?.fieldRef ? fields[e.valueFrom.fieldRef.fieldPath] : undefined);
    if (v !== undefined) env[e.name] = v;
  }
  return env;
}
