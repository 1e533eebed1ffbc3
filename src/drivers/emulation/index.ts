/** Software emulation (TCG) selection. */
export * from './virt-type';
