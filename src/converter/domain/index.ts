/** The libvirt domain XML model and its codec. */

export { type ChildSpec, domainSpec, type ElementSpec, type Leaf } from './schema';
export * from './types';
export { DomainXMLError, decodeDomain, encodeDevice, encodeDomain } from './xml';
