/** Public entry of `kubevirt-ts/converter`: VMI -> libvirt domain, and the domain XML model. */

export { configurators } from './configurators';
export {
  type ConverterContext,
  type ConverterPaths,
  debianOVMF,
  defaultConverterContext,
  type FirmwarePaths,
  type ResolvedHostDevice,
  type SEVHost,
  upstreamPaths,
} from './context';
export { type Configurator, Conversion, type LaunchSecurityMode, userAlias } from './conversion';
export { convertVMI, convertVMIToXML } from './convert';
export { busPrefix, DeviceNamer, deviceSuffix } from './device-names';
export * from './domain';
export { ConversionError } from './errors';
// Pure ISO contents; the xorriso builder (IO) is imported from './iso' by the launcher.
export { type IsoContents, isoContents, type ResolvedVolumeData } from './iso/contents';
export { bootMemoryBytes, virtioMemDevice } from './virtio-mem';
export { type ConfigVolumeKind, HOTPLUG_DISK_DIR, volumePaths } from './volume-paths';
