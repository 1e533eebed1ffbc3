/** Public entry of `kubevirt-ts/testing`. */
export {};
