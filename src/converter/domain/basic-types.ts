/**
 * The small pieces of the libvirt domain XML model (./types) that every part uses:
 * switches, marker elements, device addresses and aliases, sized values.
 */

/** `yes`/`no` switches, as libvirt spells most booleans. */
export type YesNo = 'yes' | 'no';
/** `on`/`off` switches (features, hyperv, memballoon options). */
export type OnOff = 'on' | 'off';

/** A bare marker element such as `<acpi/>`. */
export type Empty = Record<string, never>;

/** A feature switch element: `<smm state="on"/>`. */
export interface FeatureState {
  state?: OnOff;
}

/** A device address (`pci`, `drive`, `usb`, `virtio-serial`, ...). */
export interface Address {
  /** Absent only for a mediated device's `<address uuid=.../>`. */
  type?: string;
  domain?: string;
  bus?: string;
  slot?: string;
  function?: string;
  controller?: string;
  target?: string;
  unit?: string;
  port?: string;
  device?: string;
  uuid?: string;
  multifunction?: OnOff;
}

/** `<alias name="ua-..."/>`: KubeVirt names user-visible devices `ua-<name>`. */
export interface Alias {
  name: string;
}

/** `<memory unit="KiB">1048576</memory>` and its siblings. */
export interface SizedValue {
  unit?: string;
  value: number;
}
