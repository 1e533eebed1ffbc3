/**
 * VMI admission rule cases: each mutates a fixture manifest (test/fixtures/manifests) and
 * expects the exact field path and message upstream's admitter reports. The cases are in
 * the vmi-rules*.test.ts files, one area each.
 */
import { expect } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { fixture } from '../../support/fixtures';

/** One rule: the mutation of a fixture and the error it must bring. */
export interface VmiRuleCase {
  name: string;
  file: string;
  mutate: (vmi: VirtualMachineInstance) => void;
  path: string;
  message: string;
  gates?: string[];
  /** Control-plane architecture of the cluster (amd64 unless set). */
  arch?: string;
  /** Feature gates listed in `disabledFeatureGates`. */
  disabledGates?: string[];
  /** The cluster's vmRolloutStrategy (upstream's default, LiveUpdate, unless set). */
  rollout?: 'Stage' | 'LiveUpdate';
}

/** Admits the mutated fixture on a cluster configured as the case says; expects the case's error among those reported. */
export function expectVmiRuleError(c: VmiRuleCase): void {
  const vmi = fixture<VirtualMachineInstance>(c.file);
  c.mutate(vmi);
  const config = createClusterConfig(
    {
      developerConfiguration: { disabledFeatureGates: c.disabledGates ?? [] },
      ...(c.rollout ? { vmRolloutStrategy: c.rollout } : {}),
      ...(c.name.includes('cluster forbids')
        ? { network: { permitBridgeInterfaceOnPodNetwork: false } }
        : {}),
    },
    { hostArchitecture: c.arch ?? 'amd64', featureGates: c.gates ?? [] },
  );
  const { errors } = admit(vmi as never, config);
  expect(errors.map((e) => [e.path, e.message])).toContainEqual([c.path, c.message]);
}
