/** ISO images for cloud-init and config volumes: pure contents, and the xorriso builder (IO). */

export { type BuildIsoOptions, buildIso } from './build';
export { type IsoContents, isoContents, type ResolvedVolumeData } from './contents';
