/** The typed cluster configuration (KubeVirt CR `spec.configuration`), feature gates and quantities. */
export * from './cluster-config';
export * from './feature-gates';
export * from './quantity';
export * from './rest-client';
export * from './tls-configuration';
export * from './validate-configuration';
