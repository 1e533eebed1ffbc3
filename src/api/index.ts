/** Public entry of `kubevirt-ts/api`. */
export {};
