/** Guest disk target names: `vda`, `vdb`, ... for virtio and `sda`, ... for sata/scsi/usb. */

/** The prefix libvirt expects for a disk bus. */
export function busPrefix(bus: string): 'vd' | 'sd' | 'hd' {
  if (bus === 'virtio') return 'vd';
  if (bus === 'ide') return 'hd';
  return 'sd';
}

/** `index` 0 -> `a`, 25 -> `z`, 26 -> `aa` (spreadsheet-style, like the Linux kernel). */
export function deviceSuffix(index: number): string {
  let n = index;
  let out = '';
  do {
    out = String.fromCharCode(97 + (n % 26)) + out;
    n = Math.floor(n / 26) - 1;
  } while (n >= 0);
  return out;
}

/** Hands out target names per prefix in disk order. */
export class DeviceNamer {
  private readonly next = new Map<string, number>();

  /** The next free name for `bus`, with its index on that prefix (the SCSI unit). */
  take(bus: string): { dev: string; index: number } {
    const prefix = busPrefix(bus);
    const index = this.next.get(prefix) ?? 0;
    this.next.set(prefix, index + 1);
    return { dev: prefix + deviceSuffix(index), index };
  }
}
