/**
 * A private directory for the importer's unix sockets. A socket's path must fit in
 * sun_path (107 bytes): local mode's scratch directories are deeper than that, so the
 * sockets live in a fresh directory under the temporary directory instead (mode 0700, as
 * mkdtemp makes it), removed with what is in it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A directory made for one export; `remove` deletes it and its files. */
export interface SocketDir {
  dir: string;
  remove(): Promise<void>;
}

export async function makeSocketDir(): Promise<SocketDir> {
  const dir = await mkdtemp(join(tmpdir(), 'kvts-nbd-'));
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}
