/**
 * Progress of `kubevirt-ts up`: one line per VM/VMI phase change with the time since it
 * was applied, and a spinner on a terminal while a step is slow (nothing printed for a
 * while). Lines are plain when the output is not a terminal, so logs stay readable.
 */
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { VmiResource } from '../../controllers/common/vmi-resource';
import { Informer } from '../../controllers/runtime/informer';
import { VirtualMachineType } from '../../controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../controllers/runtime/types';

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** Escapes control characters so object names cannot forge terminal output. */
export function printable(text: string): string {
  let out = '';
  for (const ch of text) {
    const c = ch.charCodeAt(0);
    out += c < 0x20 || (c >= 0x7f && c <= 0x9f) ? `\\x${c.toString(16).padStart(2, '0')}` : ch;
  }
  return out;
}

/** Prints progress lines to a stream; a spinner shows while waiting on a terminal. */
export class ProgressPrinter {
  private readonly started = Date.now();
  private spinner: NodeJS.Timeout | undefined;
  private frame = 0;
  private waiting = '';
  private readonly tty: boolean;

  constructor(private readonly out: NodeJS.WriteStream = process.stderr) {
    this.tty = Boolean(out.isTTY);
  }

  /** Seconds since this printer was made, e.g. `3.2s`. */
  elapsed(): string {
    return `${((Date.now() - this.started) / 1000).toFixed(1)}s`;
  }

  /** Prints one progress line. */
  line(text: string): void {
    this.clearSpinner();
    this.out.write(`[${this.elapsed().padStart(6)}] ${text}\n`);
    this.drawSpinner();
  }

  /** Shows a spinner with `what` until the next line (terminals only). */
  wait(what: string): void {
    this.waiting = what;
    if (!this.tty || this.spinner) return;
    this.spinner = setInterval(() => this.drawSpinner(), 100);
    this.spinner.unref();
  }

  /** Stops the spinner. */
  done(): void {
    this.clearSpinner();
    if (this.spinner) clearInterval(this.spinner);
    this.spinner = undefined;
    this.waiting = '';
  }

  private drawSpinner(): void {
    if (!this.tty || !this.spinner || !this.waiting) return;
    this.frame = (this.frame + 1) % FRAMES.length;
    this.out.write(`\r${FRAMES[this.frame]} ${this.waiting} (${this.elapsed()})\x1b[K`);
  }

  private clearSpinner(): void {
    if (this.tty && this.spinner) this.out.write('\r\x1b[K');
  }
}

/**
 * Watches VMs and VMIs and prints their phase transitions (VMI phase, node, VM
 * printableStatus). Returns a function that stops watching.
 */
export async function watchPhases(client: ObjectClient, progress: ProgressPrinter): Promise<() => void> {
  const seen = new Map<string, string>();
  const report = (key: string, state: string, text: string) => {
    if (seen.get(key) === state) return;
    seen.set(key, state);
    progress.line(text);
  };
  const vmis = new Informer<KubeObject>(client, VmiResource);
  const vms = new Informer<KubeObject>(client, VirtualMachineType);
  const onVmi = (o: KubeObject) => {
    const v = o as VirtualMachineInstance & KubeObject;
    const id = printable(`${v.metadata?.namespace}/${v.metadata?.name}`);
    const phase = v.status?.phase ?? 'Pending';
    const node = v.status?.nodeName ? ` on node ${printable(v.status.nodeName)}` : '';
    const paused = v.status?.conditions?.some((c) => c.type === 'Paused' && c.status === 'True');
    report(
      `vmi/${id}`,
      `${phase}${paused}`,
      `VirtualMachineInstance ${id}: ${phase}${paused ? ' (paused)' : ''}${node}`,
    );
  };
  const onVm = (o: KubeObject) => {
    const v = o as VirtualMachine & KubeObject;
    const id = printable(`${v.metadata?.namespace}/${v.metadata?.name}`);
    // A VM the controller has not looked at yet has no status: nothing to report.
    const st = v.status?.printableStatus;
    if (!st) return;
    report(`vm/${id}`, st, `VirtualMachine ${id}: ${st}`);
  };
  vmis.addEventHandler({ onAdd: onVmi, onUpdate: (_a, b) => onVmi(b) });
  vms.addEventHandler({ onAdd: onVm, onUpdate: (_a, b) => onVm(b) });
  vmis.start();
  vms.start();
  await Promise.all([vmis.waitForSync(), vms.waitForSync()]);
  return () => {
    void vmis.stop();
    void vms.stop();
  };
}
