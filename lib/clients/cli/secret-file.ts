import { randomBytes } from 'node:crypto';
import { link, open, rename, stat, unlink } from 'node:fs/promises';
import { resolve } from 'node:path';

/** FILE is already there and the command was not told to replace it. */
export class SecretFileExistsError extends Error {
  override name = 'SecretFileExistsError';
  readonly path: string;
  constructor(path: string) {
    super(`${path} already exists; pass --force to replace it`);
    this.path = path;
  }
}

/** Checked before a secret is made, so a refusal leaves nothing changed (no token replaced). */
export async function assertSecretFileFree(path: string, overwrite: boolean): Promise<void> {
  if (overwrite) return;
  try {
    await stat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  throw new SecretFileExistsError(path);
}

/**
 * Writes a secret to FILE, owner-only (0600) from its first byte: it is written whole under a
 * fresh name created exclusively, then linked to FILE (which fails if FILE appeared meanwhile)
 * or, when told to overwrite, renamed over it. Never a half-written or world-readable FILE.
 * Returns FILE's absolute path.
 */
export async function writeSecretFile(path: string, content: string, overwrite: boolean): Promise<string> {
  const target = resolve(path);
  const temporary = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(content);
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (overwrite) await rename(temporary, target);
    else await link(temporary, target);
    return target;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new SecretFileExistsError(path);
    throw error;
  } finally {
    // Gone already after a rename; after a link, FILE keeps the content.
    await unlink(temporary).catch(() => undefined);
  }
}
