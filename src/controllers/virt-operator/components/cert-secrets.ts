/**
 * Names of the certificate Secrets the components mount (upstream's), shared by the
 * renderers (which mount them) and virt-operator's certificate plan (which makes them).
 */

/** virt-handler's serving pair: its REST server for virt-api and its metrics server. */
export const HANDLER_SERVER_CERTS = 'kubevirt-virt-handler-server-certs';
/** virt-controller's serving pair: its metrics server. */
export const CONTROLLER_CERTS = 'kubevirt-controller-certs';
/** cdi-uploadproxy's serving pair (CDI's Secret name). */
export const UPLOADPROXY_SERVER_CERTS = 'cdi-uploadproxy-server-cert';
/** The client pair cdi-uploadproxy presents to upload servers (CDI's Secret name). */
export const UPLOADSERVER_CLIENT_CERTS = 'cdi-uploadserver-client-cert';
/**
 * The upload-token signer: virt-api signs UploadTokenRequests' tokens with its key,
 * cdi-uploadproxy verifies them with its certificate (CDI keeps an RSA pair in
 * `cdi-api-signing-key`; here the install's certificate machinery keeps an ECDSA one).
 */
export const UPLOAD_TOKEN_SIGNER = 'kubevirt-ts-upload-token-signer';
/** virt-exportproxy's serving pair (upstream's Secret name). */
export const EXPORTPROXY_CERTS = 'kubevirt-exportproxy-certs';
