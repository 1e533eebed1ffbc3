/** The in-memory fake driver. */
export * from './fake-driver';
export * from './fake-guest-agent';
export * from './fake-host';
export * from './fake-migration';
export * from './fake-network';
export * from './fake-sev';
