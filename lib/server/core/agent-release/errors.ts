import { ErrorTable, refused } from '../error-table.ts';

/** The agent-release area's one error tree (lib/server/core/agent-release), and at the end its table: one row each. */
export class AgentReleaseError extends Error {
  override name = 'AgentReleaseError';
}

/** No release key the control plane trusts signed the manifest: nothing is stored, no upload is granted. */
export class ReleaseSignatureError extends AgentReleaseError {
  override name = 'ReleaseSignatureError';
}

/** The executable kept under the manifest's digest is not the manifest's (its size or its SHA-256). */
export class ReleaseDigestError extends AgentReleaseError {
  override name = 'ReleaseDigestError';
}

/** Another release is published under the same version and architecture: a version names one executable. */
export class ReleaseConflictError extends AgentReleaseError {
  override name = 'ReleaseConflictError';
}

/** No release of that version (for that architecture) is published. */
export class ReleaseNotFoundError extends AgentReleaseError {
  override name = 'ReleaseNotFoundError';
  readonly version: string;
  readonly arch: string;
  constructor(version: string, arch: string, options?: ErrorOptions) {
    super(`no release ${version} for ${arch} is published: mesh agent publish FILE adds one`, options);
    this.version = version;
    this.arch = arch;
  }
}

/** The control plane was given no release key: it can verify no release, so it takes none. */
export class NoReleaseKeysError extends AgentReleaseError {
  override name = 'NoReleaseKeysError';
}

export const agentReleaseErrors = new ErrorTable({
  AgentReleaseError: refused(AgentReleaseError, 409, 'release_refused'),
  ReleaseSignatureError: refused(ReleaseSignatureError, 400, 'release_bad_signature'),
  ReleaseDigestError: refused(ReleaseDigestError, 400, 'release_bad_digest'),
  ReleaseConflictError: refused(ReleaseConflictError, 409, 'release_conflict'),
  ReleaseNotFoundError: refused(ReleaseNotFoundError, 404, 'release_not_found', {
    details: (error: ReleaseNotFoundError) => ({ version: error.version, arch: error.arch }),
  }),
  NoReleaseKeysError: refused(NoReleaseKeysError, 409, 'release_keys_missing'),
});
