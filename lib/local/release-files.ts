import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { ReleaseFiles, Transfer } from '../server/core/agent-release/ports.ts';
import { type ReleaseManifest, transferOf } from '../server/core/agent-release/release.ts';

/** Where the local runtime serves executables: `/local/releases/<sha256>?…`, its own path, never a route of the API's table. */
export const releaseFilesPath = '/local/releases/';
/** How long a granted transfer may start, as S3's presigned URLs on AWS (s3-release-files.ts). */
const transferSeconds = 15 * 60;
const digestPattern = /^[0-9a-f]{64}$/;

/**
 * The executables on one machine, in the data folder (`DIR/releases/<sha256>`), served as S3
 * serves them on AWS: a URL signed for one object, one method and a short time is the whole
 * authority of a transfer. A PUT is streamed to a file beside, hashed as it comes, and renamed to
 * its digest's name only when its size and SHA-256 are the ones granted; anything else is
 * deleted and answered 400, so a file kept under a digest is always that content. Nothing is
 * held whole in memory.
 */
export class LocalReleaseFiles implements ReleaseFiles {
  readonly #folder: string;
  readonly #secret = randomBytes(32);
  readonly #now: () => Date;
  #base: string | undefined;

  constructor(options: { readonly folder: string; readonly now?: () => Date }) {
    this.#folder = options.folder;
    this.#now = options.now ?? (() => new Date());
  }

  /** The local API's own URL, once it listens: the transfers' URLs are on it. */
  listening(url: string): void {
    this.#base = url.replace(/\/$/, '');
  }

  async executable(sha256: string): Promise<{ bytes: number; sha256: string } | undefined> {
    if (!digestPattern.test(sha256)) return undefined;
    try {
      const kept = await stat(join(this.#folder, sha256));
      return { bytes: kept.size, sha256 };
    } catch {
      return undefined;
    }
  }

  async uploadTo(manifest: ReleaseManifest): Promise<Transfer> {
    const transfer = transferOf(manifest);
    const expires = this.#expiry();
    return {
      method: 'PUT',
      url: this.#url('PUT', transfer.sha256, transfer.bytes, expires),
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(transfer.bytes) },
      expiresAt: new Date(expires * 1000).toISOString(),
    };
  }

  async downloadFrom(manifest: ReleaseManifest): Promise<Transfer> {
    const expires = this.#expiry();
    return {
      method: 'GET',
      url: this.#url('GET', transferOf(manifest).sha256, transferOf(manifest).bytes, expires),
      headers: {},
      expiresAt: new Date(expires * 1000).toISOString(),
    };
  }

  /**
   * Answers a request to `releaseFilesPath` (the local API's server hands it over); false when
   * the path is not one of its own.
   */
  async serve(request: IncomingMessage, response: ServerResponse, path: string, query: URLSearchParams) {
    if (!path.startsWith(releaseFilesPath)) return false;
    const sha256 = path.slice(releaseFilesPath.length);
    const method = request.method ?? 'GET';
    const bytes = Number(query.get('bytes'));
    const expires = Number(query.get('expires'));
    const signature = query.get('signature') ?? '';
    const refuse = (status: number, code: string, message: string) => {
      request.resume();
      answer(response, status, { error: { code, message } });
      return true;
    };
    if (method !== 'PUT' && method !== 'GET')
      return refuse(405, 'method_not_allowed', `${method} is not allowed on a release file`);
    if (
      !digestPattern.test(sha256) ||
      !Number.isSafeInteger(bytes) ||
      !Number.isSafeInteger(expires) ||
      !this.#signedFor(method, sha256, bytes, expires, signature)
    )
      return refuse(
        403,
        'transfer_not_granted',
        'this URL grants no transfer: ask the control plane for one',
      );
    if (expires * 1000 < this.#now().getTime())
      return refuse(403, 'transfer_expired', 'this transfer’s time ran out: ask the control plane again');
    if (method === 'GET') return this.#download(sha256, response);
    return this.#upload(request, response, sha256, bytes);
  }

  async #download(sha256: string, response: ServerResponse) {
    const path = join(this.#folder, sha256);
    const kept = await stat(path).catch(() => undefined);
    if (!kept) {
      answer(response, 404, {
        error: { code: 'release_file_not_found', message: `no executable ${sha256}` },
      });
      return true;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': kept.size });
    createReadStream(path).pipe(response);
    return true;
  }

  async #upload(request: IncomingMessage, response: ServerResponse, sha256: string, bytes: number) {
    const declared = Number(request.headers['content-length']);
    if (declared !== bytes) {
      request.resume();
      answer(response, 400, {
        error: {
          code: 'release_bad_digest',
          message: `the upload must be ${bytes} bytes, not ${request.headers['content-length'] ?? 'of no stated length'}`,
        },
      });
      return true;
    }
    await mkdir(this.#folder, { recursive: true, mode: 0o700 });
    const temporary = join(this.#folder, `${sha256}.${randomBytes(4).toString('hex')}.part`);
    const hash = createHash('sha256');
    let received = 0;
    const file = createWriteStream(temporary, { mode: 0o600 });
    const done = await new Promise<boolean>((resolve) => {
      request.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received > bytes) {
          request.destroy();
          resolve(false);
          return;
        }
        hash.update(chunk);
        if (!file.write(chunk)) {
          request.pause();
          file.once('drain', () => request.resume());
        }
      });
      request.once('end', () => resolve(true));
      request.once('error', () => resolve(false));
      request.once('aborted', () => resolve(false));
    });
    await new Promise<void>((resolve) => file.end(resolve));
    const digest = hash.digest('hex');
    if (!done || received !== bytes || digest !== sha256) {
      await rm(temporary, { force: true });
      if (!response.writableEnded)
        answer(response, 400, {
          error: {
            code: 'release_bad_digest',
            message: `the executable received (${received} bytes) is not the one granted: ${bytes} bytes with SHA-256 ${sha256}; nothing was kept`,
          },
        });
      return true;
    }
    await rename(temporary, join(this.#folder, sha256));
    answer(response, 200, { sha256, bytes });
    return true;
  }

  #url(method: string, sha256: string, bytes: number, expires: number): string {
    if (!this.#base) throw new Error('the local release files are asked for a URL before the API listens');
    const signature = this.#signature(method, sha256, bytes, expires);
    return `${this.#base}${releaseFilesPath}${sha256}?bytes=${bytes}&expires=${expires}&signature=${signature}`;
  }

  #signature(method: string, sha256: string, bytes: number, expires: number): string {
    return createHmac('sha256', this.#secret)
      .update(`${method}\n${sha256}\n${bytes}\n${expires}`)
      .digest('hex');
  }

  #signedFor(method: string, sha256: string, bytes: number, expires: number, signature: string): boolean {
    const expected = Buffer.from(this.#signature(method, sha256, bytes, expires), 'hex');
    const given = Buffer.from(signature, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  #expiry(): number {
    return Math.floor(this.#now().getTime() / 1000) + transferSeconds;
  }
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}
