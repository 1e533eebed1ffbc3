/** The topology key of the driver's volumes: a pool lives on one node. */
export const TOPOLOGY_KEY = 'topology.kubevirt-ts.io/node';
