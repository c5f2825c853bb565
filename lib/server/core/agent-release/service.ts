import type { Actor } from '../audit/record.ts';
import { canonicalJson } from '../canonical.ts';
import {
  NoReleaseKeysError,
  ReleaseConflictError,
  ReleaseDigestError,
  ReleaseNotFoundError,
  ReleaseSignatureError,
} from './errors.ts';
import type { ReleaseFiles, ReleaseRecords, StoredRelease, Transfer } from './ports.ts';
import { type SignedRelease, signedByTrusted, transferOf } from './release.ts';

/**
 * What `POST /agent/releases` answers: the upload to make first (the executable is not kept
 * yet: nothing was written), or the release published (`stored` false when it was already).
 */
export type PublishAnswer =
  | { readonly state: 'upload'; readonly upload: Transfer }
  | { readonly state: 'published'; readonly stored: boolean; readonly release: StoredRelease };

export type AgentReleaseDeps = {
  readonly records: ReleaseRecords;
  readonly files: ReleaseFiles;
  /** The release keys the control plane takes releases signed by (MESH_RELEASE_KEYS). */
  readonly trusted: readonly string[];
  readonly now: () => Date;
};

/**
 * The releases of `mesh-host` the control plane serves (docs/host-agent.md, "Releases"). A
 * publish is asked twice: the first, with the signed manifest, is answered with where to put the
 * executable; the second, once it is there, checks it against the manifest and publishes. A
 * manifest no trusted key signed is refused before any upload is granted, so the store only ever
 * holds what a release key vouched for; the host checks it all again before it runs it.
 */
export class AgentReleases {
  readonly #deps: AgentReleaseDeps;

  constructor(deps: AgentReleaseDeps) {
    this.#deps = deps;
  }

  async publish(release: SignedRelease, by: Actor): Promise<PublishAnswer> {
    const { manifest } = release;
    const name = `release ${manifest.version} (${manifest.arch})`;
    if (this.#deps.trusted.length === 0)
      throw new NoReleaseKeysError(
        'the control plane trusts no release key (MESH_RELEASE_KEYS): it cannot verify a release, so it takes none',
      );
    if (!signedByTrusted(release, this.#deps.trusted))
      throw new ReleaseSignatureError(`${name}: no release key the control plane trusts signed its manifest`);
    const kept = await this.#deps.records.read(manifest.version, manifest.arch);
    if (kept) return { state: 'published', stored: false, release: sameOrRefused(kept, release, name) };
    // what is kept is the transfer: the executable, or the executable compressed
    const transfer = transferOf(manifest);
    const executable = await this.#deps.files.executable(transfer.sha256);
    if (!executable) return { state: 'upload', upload: await this.#deps.files.uploadTo(manifest) };
    if (executable.bytes !== transfer.bytes || executable.sha256 !== transfer.sha256)
      throw new ReleaseDigestError(
        `${name}: the file kept is ${executable.bytes} bytes with SHA-256 ${executable.sha256}, the manifest says ${transfer.bytes} bytes with ${transfer.sha256}`,
      );
    const stored: StoredRelease = {
      ...release,
      publishedAt: this.#deps.now().toISOString(),
      publishedBy: by.principal,
    };
    const put = await this.#deps.records.put(stored, by);
    return { state: 'published', stored: put.stored, release: sameOrRefused(put.kept, release, name) };
  }

  list(): Promise<StoredRelease[]> {
    return this.#deps.records.list();
  }

  /** What a host takes: the signed manifest, and where to fetch the executable from. */
  async forHost(
    version: string,
    arch: string,
  ): Promise<{ readonly release: StoredRelease; readonly download: Transfer }> {
    const release = await this.#deps.records.read(version, arch);
    if (!release) throw new ReleaseNotFoundError(version, arch);
    return { release, download: await this.#deps.files.downloadFrom(release.manifest) };
  }
}

/** A version and architecture name one release: the same asked again is answered, another refused. */
function sameOrRefused(kept: StoredRelease, asked: SignedRelease, name: string): StoredRelease {
  if (canonicalJson(kept.manifest) === canonicalJson(asked.manifest)) return kept;
  throw new ReleaseConflictError(
    `${name} is published already with another executable (SHA-256 ${kept.manifest.sha256}): a new build takes a new version`,
  );
}
