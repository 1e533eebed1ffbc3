/** The in-memory fake driver. */
export * from './fake-driver';
export * from './fake-guest-agent';
export * from './fake-host';
