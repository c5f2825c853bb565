import type { Actor } from '../audit/record.ts';
import type { ReleaseManifest, SignedRelease } from './release.ts';

/** A release the control plane serves: its signed manifest, who published it and when. */
export type StoredRelease = SignedRelease & { readonly publishedAt: string; readonly publishedBy: string };

/**
 * Where a transfer of an executable goes: a URL that grants exactly one object for a short time
 * (S3's presigned PUT or GET on AWS, the local runtime's signed URL on one machine), and the
 * headers the request must carry (the PUT's SHA-256 and length, which the store holds it to).
 */
export type Transfer = {
  readonly method: 'PUT' | 'GET';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly expiresAt: string;
};

/**
 * The executables, kept by their SHA-256 (lib/server/adapters/agent-release/s3-release-files.ts,
 * lib/local/release-files.ts). Bytes never pass through the control plane's functions: a
 * publisher puts the executable where `uploadTo` says, a host takes it from where `downloadFrom`
 * says; both stores refuse a PUT whose size or digest is not the one it was granted for.
 */
export interface ReleaseFiles {
  /** The executable kept under this digest, as the store checked it; undefined when none is. */
  executable(sha256: string): Promise<{ readonly bytes: number; readonly sha256: string } | undefined>;
  uploadTo(manifest: ReleaseManifest): Promise<Transfer>;
  downloadFrom(manifest: ReleaseManifest): Promise<Transfer>;
}

/** The releases published (lib/server/adapters/agent-release/release-records.ts): one per version and architecture. */
export interface ReleaseRecords {
  /** Writes it with its audit record (`agent.publish`), unless one is kept for its version and arch: that one is answered. */
  put(release: StoredRelease, by: Actor): Promise<{ readonly stored: boolean; readonly kept: StoredRelease }>;
  read(version: string, arch: string): Promise<StoredRelease | undefined>;
  /** Every release published, newest first. */
  list(): Promise<StoredRelease[]>;
}
