/**
 * Names of the certificate Secrets the components mount (upstream's), shared by the
 * renderers (which mount them) and virt-operator's certificate plan (which makes them).
 */

/** virt-handler's serving pair: its REST server for virt-api and its metrics server. */
export const HANDLER_SERVER_CERTS = 'kubevirt-virt-handler-server-certs';
/** virt-controller's serving pair: its metrics server. */
export const CONTROLLER_CERTS = 'kubevirt-controller-certs';
