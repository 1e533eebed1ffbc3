/**
 * `kubevirt-ts image import NAME PATH | list | rm NAME`: the local image store that
 * containerDisk and kernel-boot container images resolve from in local mode.
 */
import type { Command } from 'commander';
import { ImageStore } from '../local/images';
import { printable } from '../local/progress';
import { defaultStateDir, statePaths } from '../local/state-dir';

export function registerImageCommand(program: Command): void {
  const image = program
    .command('image')
    .description('the local image store (containerDisk and kernel-boot images)');
  const store = (o: { stateDir: string }) => new ImageStore(statePaths(o.stateDir).images);
  image
    .command('import')
    .description(
      'import PATH as image NAME: a directory is the image root (e.g. /vmlinuz, /initrd.img, /disk/disk.qcow2); a file becomes /disk/<file>',
    )
    .argument('<name>', 'image reference, e.g. kubevirt-ts/tiny-guest')
    .argument('<path>', 'file or directory')
    .option('--state-dir <dir>', 'state directory', defaultStateDir())
    .option('--if-missing', 'do nothing when the image is already imported')
    .action((name: string, path: string, o: { stateDir: string; ifMissing?: boolean }) => {
      const s = store(o);
      if (o.ifMissing && s.has(name)) {
        process.stdout.write(`image ${printable(name)} already imported\n`);
        return;
      }
      const img = s.import(name, path);
      process.stdout.write(`imported ${printable(img.name)} into ${printable(img.dir)}\n`);
    });
  image
    .command('list')
    .description('list imported images')
    .option('--state-dir <dir>', 'state directory', defaultStateDir())
    .action((o: { stateDir: string }) => {
      for (const img of store(o).list()) process.stdout.write(`${printable(img.name)}\n`);
    });
  image
    .command('rm')
    .description('remove an image')
    .argument('<name>')
    .option('--state-dir <dir>', 'state directory', defaultStateDir())
    .action((name: string, o: { stateDir: string }) => {
      if (!store(o).remove(name)) throw new Error(`image ${printable(name)} is not in the local image store`);
    });
}
