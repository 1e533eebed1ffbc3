/**
 * The VMI resource every component reads and writes (virt-controller, virt-handler, the
 * CLI), kept here so none of them imports another's internals.
 */
import { VirtualMachineInstanceType } from '../runtime/resources';
import type { ResourceType } from '../runtime/types';

/**
 * The VMI resource as upstream's CRD defines it: no status subresource, so one update
 * writes status and labels together.
 */
export const VmiResource: ResourceType = { ...VirtualMachineInstanceType, statusSubresource: false };
