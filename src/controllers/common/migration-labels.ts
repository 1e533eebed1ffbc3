/**
 * The migration labels virt-controller sets and virt-handler selects on, under the names
 * both use; the values are the API's (src/api/labels.ts).
 */
import { Labels } from '../../api/labels';

/** Labels of migration target pods and migrating VMIs (upstream values). */
export const MigrationLabels = {
  jobUid: Labels.migrationJob,
  targetNode: Labels.migrationTargetNodeName,
  vmiName: Labels.migrationSelector,
} as const;
