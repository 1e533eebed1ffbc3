/**
 * Disk and volume rules of a VMI spec (upstream's VMI create admitter): the disks in
 * ./vmi-disks, the volumes in ./vmi-volumes.
 */
export { validateDisks, validateVolumesHaveDisks } from './vmi-disks';
export { validateAbsolutePath, validateVolumes } from './vmi-volumes';
