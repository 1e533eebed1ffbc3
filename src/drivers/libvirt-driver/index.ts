/** The libvirt driver (KVM, or TCG through the emulation factory). */
export * from './factories';
export * from './host-probe';
export * from './libvirt-driver';
export * from './states';
