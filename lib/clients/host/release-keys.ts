import { createHash } from 'node:crypto';

/**
 * The release keys this agent trusts before any rotation (release-slots.ts keeps a rotation's):
 * `npm run package` builds them into the executable (tools/packaging/executable.ts defines
 * `MESH_RELEASE_KEYS`), so a host trusts what its package was made with and nothing its
 * environment says. Run from the tree (the beds, development), they are MESH_RELEASE_KEYS's.
 */
declare const MESH_RELEASE_KEYS: readonly string[] | undefined;

export function builtInReleaseKeys(env: NodeJS.ProcessEnv = process.env): readonly string[] {
  if (typeof MESH_RELEASE_KEYS !== 'undefined' && MESH_RELEASE_KEYS) return MESH_RELEASE_KEYS;
  return (env.MESH_RELEASE_KEYS ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key.length > 0);
}

/** A key as people compare it: the first 16 hex digits of the SHA-256 of its SPKI bytes. */
export const releaseKeyFingerprint = (key: string) =>
  createHash('sha256').update(Buffer.from(key, 'base64')).digest('hex').slice(0, 16);
