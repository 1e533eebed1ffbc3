/** The CustomResourceDefinitions of the install: the generated ones in the repository's crds/. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../../runtime/types';

/** Every CRD in `crdsDir` (one per `<group>_<plural>.yaml`, `all.yaml` left out), by file name. */
export function crdObjects(crdsDir: string): KubeObject[] {
  const out: KubeObject[] = [];
  for (const f of readdirSync(crdsDir)
    .filter((n) => n.endsWith('.yaml') && n !== 'all.yaml')
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(crdsDir, f), 'utf8'))) {
      const obj = doc.toJS() as KubeObject | null;
      if (!obj) continue;
      if (obj.kind !== 'CustomResourceDefinition')
        throw new Error(`${f}: ${obj.kind} is not a CustomResourceDefinition`);
      out.push(obj);
    }
  }
  return out;
}
