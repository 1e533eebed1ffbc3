/** Public entry of `kubevirt-ts/drivers`. */
export {};
