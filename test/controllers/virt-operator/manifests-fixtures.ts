/**
 * The rendered install for the manifest tests: every install file's objects by file name
 * (the operator manifest too), and the direct install's objects, with a lookup by kind.
 */
import { crdsDir } from '../../../scripts/gen-crds';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import {
  defaultInstallOptions,
  renderPlainInstall,
} from '../../../src/controllers/virt-operator/components/index';
import { virtOperatorObjects } from '../../../src/controllers/virt-operator/components/virt-operator';

// biome-ignore lint/suspicious/noExplicitAny: the tests walk arbitrary Kubernetes objects
export type Obj = Record<string, any>;

/** The objects of `kind` (named `name`, when given) among `objs`. */
export const byKind = (objs: Obj[], kind: string, name?: string) =>
  objs.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));

/** The default install rendered: `files` by manifest file name, `all` the direct install's objects. */
export function renderedManifests(): { files: Record<string, KubeObject[]>; all: Obj[] } {
  const files: Record<string, KubeObject[]> = {
    ...renderPlainInstall(defaultInstallOptions(), crdsDir),
    'kubevirt-ts-operator.yaml': virtOperatorObjects(defaultInstallOptions(), crdsDir),
  };
  // The direct install (the operator manifest repeats the namespace and the KubeVirt CRD).
  const all = Object.entries(files)
    .filter(([f]) => f !== 'kubevirt-ts-operator.yaml')
    .flatMap(([, o]) => o) as Obj[];
  return { files, all };
}
