/**
 * The `AccessCredentialsSynchronized` VMI condition from the launcher's guest-agent
 * credential sync (upstream's virt-handler updateAccessCredentialConditions): True with
 * the launcher's message when the agent took the credentials, False with the failure
 * otherwise; replaced (new lastTransitionTime) only when status or message change; left
 * alone while the launcher reports no sync (no qemuGuestAgent credentials).
 */
import type { VirtualMachineInstanceCondition } from '../../api/generated/types';
import type { LauncherAccessCredential } from '../launcher-protocol/domain-report';

/** Upstream's condition type. */
export const ACCESS_CREDENTIALS_SYNCHRONIZED = 'AccessCredentialsSynchronized';

/** The conditions with AccessCredentialsSynchronized following `report`. */
export function accessCredentialConditions(
  conds: VirtualMachineInstanceCondition[],
  report: LauncherAccessCredential | undefined,
  now: string,
): VirtualMachineInstanceCondition[] {
  if (!report) return conds;
  const status = report.succeeded ? 'True' : 'False';
  const cur = conds.find((c) => c.type === ACCESS_CREDENTIALS_SYNCHRONIZED);
  if (cur && cur.status === status && (cur.message ?? '') === report.message) return conds;
  return [
    ...conds.filter((c) => c.type !== ACCESS_CREDENTIALS_SYNCHRONIZED),
    {
      type: ACCESS_CREDENTIALS_SYNCHRONIZED,
      status,
      lastProbeTime: null as unknown as string,
      lastTransitionTime: now,
      ...(report.message ? { message: report.message } : {}),
    },
  ];
}
