import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Folders this user alone may open; files this user alone may read or write. */
export const privateFolderMode = 0o700;
export const privateFileMode = 0o600;

/**
 * Makes `path` (and the folders it needs) a folder for this user only, and tightens whatever an
 * earlier run left in it. The data folder holds the store and the queue: provision secrets,
 * token hashes and node keys among them.
 */
export function makePrivateFolder(path: string): void {
  mkdirSync(path, { recursive: true, mode: privateFolderMode });
  tightenTree(path);
}

/**
 * Every folder under `path` to 0700, every file to 0600. Symbolic links are left alone, and what
 * they point to too: nothing outside the folder is changed. The emulators running in this
 * process (fauxqs) create their files with the process's umask; SQLite gives the journals it
 * creates later the mode of their database, so tightening once after they start is enough, and
 * until then the folder itself keeps everyone else out.
 */
export function tightenTree(path: string): void {
  const entry = lstatSync(path);
  if (entry.isSymbolicLink()) return;
  if (entry.isDirectory()) {
    if ((entry.mode & 0o777) !== privateFolderMode) chmodSync(path, privateFolderMode);
    for (const name of readdirSync(path)) tightenTree(join(path, name));
  } else if ((entry.mode & 0o777) !== privateFileMode) {
    chmodSync(path, privateFileMode);
  }
}
