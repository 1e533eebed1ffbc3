/** The driver conformance suite (imports vitest: test code only). */
export * from './events';
export * from './suite';
