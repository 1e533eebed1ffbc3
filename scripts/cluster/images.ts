/**
 * The project's images (scripts/images/build.sh's images.json) in a node's containerd:
 * each imported unless present, tagged with its stable `:latest` name too, and older
 * builds of them dropped. Every node has its own image store.
 */
import { readFileSync } from 'node:fs';
import { ctr, imageRefs, importImage } from './containerd';
import type { ClusterPaths } from './state';

/** An image built by scripts/images/build.sh. */
export interface BuiltImage {
  ref: string;
  layout: string;
}

/** Reads images.json; it must name the pause image (every node's sandbox image). */
export function readImages(imagesFile: string): Record<string, BuiltImage> {
  const images = JSON.parse(readFileSync(imagesFile, 'utf8')) as Record<string, BuiltImage>;
  if (!images.pause) throw new Error(`${imagesFile}: no pause image`);
  return images;
}

/** Imports the images into the node's containerd; says what it did, for the timing log. */
export function importProjectImages(paths: ClusterPaths, images: Record<string, BuiltImage>): string {
  const present = imageRefs(paths);
  const imported: string[] = [];
  for (const [name, image] of Object.entries(images)) {
    if (importImage(paths, image.ref, image.layout, present)) imported.push(name);
    // A stable name for manifests, next to the content-keyed one.
    ctr(paths, ['images', 'tag', '--force', image.ref, `localhost/kubevirt-ts/${name}:latest`]);
  }
  // Older builds of the project's images: drop them (containerd then frees their content).
  const current = new Set(Object.values(images).map((i) => i.ref));
  const stale = [...present].filter(
    (r) => /^localhost\/kubevirt-ts\/[^:]+:[0-9a-f]{16}$/.test(r) && !current.has(r),
  );
  if (stale.length) ctr(paths, ['images', 'remove', ...stale]);
  return `imported: ${imported.join(', ') || 'none, all present'}; ${stale.length} stale removed`;
}
