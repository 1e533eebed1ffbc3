/** AMD SEV, SEV-ES and SEV-SNP: capabilities, policies, the plugin and attestation. */
export * from './attestation';
export * from './capabilities';
export * from './plugin';
export * from './policy';
