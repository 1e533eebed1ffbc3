/** Instance type and preference resolution, application and VM expansion. */
export * from './apply-instancetype';
export * from './apply-preference';
export * from './catalog';
export * from './expand';
export * from './requirements';
