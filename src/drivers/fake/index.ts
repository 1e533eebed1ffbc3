/** The in-memory fake driver. */
export * from './fake-driver';
export * from './fake-host';
