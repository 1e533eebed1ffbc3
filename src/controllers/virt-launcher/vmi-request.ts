/**
 * The VMI a handler-launcher request carries (`vmi.vmiJson`), checked to be the one this
 * launcher runs: a request for another VMI (a stale node agent, a reused pod) is refused
 * with both identities named.
 */
import type { VirtualMachineInstance } from '../../api';
import type { VMIRequest } from '../launcher-protocol';

/** The launcher's own VMI identity. */
export interface LauncherVmiIdentity {
  namespace: string;
  name: string;
  uid: string;
}

/** Parses `req`'s VMI and checks its namespace, name and uid against `own`. */
export function parseRequestVmi(
  req: Pick<VMIRequest, 'vmi'>,
  own: LauncherVmiIdentity,
): VirtualMachineInstance {
  const raw = req.vmi?.vmiJson;
  if (!raw?.length) throw new Error('request carries no VMI (vmi.vmiJson is empty)');
  let vmi: VirtualMachineInstance;
  try {
    vmi = JSON.parse(Buffer.from(raw).toString('utf8'));
  } catch (e) {
    throw new Error(`vmi.vmiJson: not JSON: ${(e as Error).message}`);
  }
  const m = vmi?.metadata;
  if (m?.uid !== own.uid || m?.name !== own.name || (m?.namespace ?? 'default') !== own.namespace) {
    throw new Error(
      `VirtualMachineInstance ${m?.namespace}/${m?.name} (uid ${m?.uid}) is not the one this launcher runs (${own.namespace}/${own.name}, uid ${own.uid})`,
    );
  }
  return vmi;
}
