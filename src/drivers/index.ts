/** Public entry of `kubevirt-ts/drivers`. */
export * from './driver';
export * from './emulation/index';
export * from './errors';
export * from './event-hub';
export * from './fake/index';
export * from './guest-agent';
/** The pure-TypeScript libvirt RPC client (`libvirt.LibvirtClient`). */
export * as libvirt from './libvirt/index';
export * from './libvirt-driver/index';
export * from './passt-backend';
export * from './plugin';
export * from './registry';
export * from './sev-snp/index';
