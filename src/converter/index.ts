/** Public entry of `kubevirt-ts/converter`. */
export {};
