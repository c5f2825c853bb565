import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { ReleaseFiles, Transfer } from '../../core/agent-release/ports.ts';
import { type ReleaseManifest, transferOf } from '../../core/agent-release/release.ts';
import { askStore } from '../../core/unavailable.ts';

/** How long a granted upload or download may start: a 120 MB executable over a slow link, not a standing door. */
export const transferSeconds = 15 * 60;

/** An executable's key: its SHA-256, so one object is one content, whoever published it under which version. */
export const executableKey = (sha256: string) => `executables/${sha256}`;

const hexOf = (base64: string) => Buffer.from(base64, 'base64').toString('hex');
const base64Of = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

/**
 * The executables in the release bucket (lib/deploy/release-bucket.ts). A publisher is granted a
 * presigned PUT that names the object's SHA-256 and length as signed headers: S3 computes the
 * digest of what arrives and refuses a body whose digest or length is not those, so an object
 * under `executables/<sha256>` is always that content. A host is granted a presigned GET.
 */
export class S3ReleaseFiles implements ReleaseFiles {
  readonly #client: S3Client;
  readonly #bucket: string;
  readonly #now: () => Date;

  constructor(options: { readonly client: S3Client; readonly bucket: string; readonly now?: () => Date }) {
    this.#client = options.client;
    this.#bucket = options.bucket;
    this.#now = options.now ?? (() => new Date());
  }

  async executable(sha256: string): Promise<{ bytes: number; sha256: string } | undefined> {
    try {
      const head = await askStore('the release bucket', () =>
        this.#client.send(
          new HeadObjectCommand({
            Bucket: this.#bucket,
            Key: executableKey(sha256),
            ChecksumMode: 'ENABLED',
          }),
        ),
      );
      if (!head.ChecksumSHA256 || head.ContentLength === undefined) return undefined;
      return { bytes: head.ContentLength, sha256: hexOf(head.ChecksumSHA256) };
    } catch (error) {
      if ((error as { name?: string }).name === 'NotFound') return undefined;
      throw error;
    }
  }

  async uploadTo(manifest: ReleaseManifest): Promise<Transfer> {
    const transfer = transferOf(manifest);
    const checksum = base64Of(transfer.sha256);
    const url = await getSignedUrl(
      this.#client,
      new PutObjectCommand({
        Bucket: this.#bucket,
        Key: executableKey(transfer.sha256),
        ContentLength: transfer.bytes,
        ChecksumSHA256: checksum,
        ContentType: 'application/octet-stream',
      }),
      {
        expiresIn: transferSeconds,
        unhoistableHeaders: new Set(['x-amz-checksum-sha256']),
        signableHeaders: new Set(['content-length', 'content-type', 'x-amz-checksum-sha256']),
      },
    );
    return {
      method: 'PUT',
      url,
      headers: {
        'content-length': String(transfer.bytes),
        'content-type': 'application/octet-stream',
        'x-amz-checksum-sha256': checksum,
      },
      expiresAt: this.#expiry(),
    };
  }

  async downloadFrom(manifest: ReleaseManifest): Promise<Transfer> {
    const url = await getSignedUrl(
      this.#client,
      new GetObjectCommand({ Bucket: this.#bucket, Key: executableKey(transferOf(manifest).sha256) }),
      { expiresIn: transferSeconds },
    );
    return { method: 'GET', url, headers: {}, expiresAt: this.#expiry() };
  }

  #expiry(): string {
    return new Date(this.#now().getTime() + transferSeconds * 1000).toISOString();
  }
}
