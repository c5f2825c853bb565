import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pipeline } from 'node:stream/promises';
import type { Transfer } from '../../server/core/agent-release/ports.ts';

/** A transfer the store refused or that broke: its status (0: no answer) and what the store said. */
export class TransferError extends Error {
  override name = 'TransferError';
  readonly status: number;
  constructor(message: string, status: number, options?: ErrorOptions) {
    super(message, options);
    this.status = status;
  }
}

/** How long a transfer may go without a byte moving before it is given up. */
const idleMs = 60_000;

function send(
  transfer: Transfer,
  headers: Record<string, string>,
): Promise<IncomingMessage> & {
  readonly request: ReturnType<typeof httpRequest>;
} {
  const url = new URL(transfer.url);
  const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
    method: transfer.method,
    headers: { ...transfer.headers, ...headers },
    timeout: idleMs,
  });
  const answered = new Promise<IncomingMessage>((resolve, reject) => {
    request.once('response', resolve);
    request.once('error', (error) =>
      reject(
        new TransferError(`${transfer.method} of the executable failed: ${error.message}`, 0, {
          cause: error,
        }),
      ),
    );
    request.once('timeout', () => request.destroy(new Error(`no byte moved in ${idleMs / 1000} s`)));
  });
  return Object.assign(answered, { request });
}

async function refusal(response: IncomingMessage, what: string): Promise<TransferError> {
  let text = '';
  for await (const chunk of response) if (text.length < 2000) text += String(chunk);
  return new TransferError(
    `${what} was refused (${response.statusCode}): ${text.slice(0, 500)}`,
    response.statusCode ?? 0,
  );
}

/** Streams FILE to where the control plane said (S3's presigned PUT, the local runtime's URL): never whole in memory. */
export async function uploadFile(transfer: Transfer, file: string): Promise<void> {
  const sending = send(transfer, {});
  // A store that refuses part-way answers before the body ends: its answer is what to show.
  const piped = pipeline(createReadStream(file), sending.request).then(
    () => undefined,
    (error: unknown) => error,
  );
  const response = await sending;
  if ((response.statusCode ?? 0) >= 300) throw await refusal(response, 'the upload');
  response.resume();
  const broken = await piped;
  if (broken) throw new TransferError(`the upload broke: ${(broken as Error).message}`, 0, { cause: broken });
}

/**
 * Streams the executable to FILE, hashing it as it comes, and answers its size and SHA-256: the
 * caller checks them against the manifest before anything uses the file.
 */
export async function downloadFile(
  transfer: Transfer,
  file: string,
  maxBytes: number,
): Promise<{ readonly bytes: number; readonly sha256: string }> {
  const sending = send(transfer, {});
  sending.request.end();
  const response = await sending;
  if ((response.statusCode ?? 0) >= 300) throw await refusal(response, 'the download');
  const hash = createHash('sha256');
  let bytes = 0;
  try {
    await pipeline(
      response,
      async function* (source: AsyncIterable<Buffer>) {
        for await (const chunk of source) {
          bytes += chunk.length;
          if (bytes > maxBytes)
            throw new TransferError(`the download is larger than the ${maxBytes} bytes announced`, 0);
          hash.update(chunk);
          yield chunk;
        }
      },
      createWriteStream(file, { mode: 0o700 }),
    );
  } catch (error) {
    await rm(file, { force: true });
    throw error;
  }
  return { bytes, sha256: hash.digest('hex') };
}

/**
 * The executable's bytes as they come, for a caller that counts and hashes them itself
 * (release-slots.ts installRelease): the answer once the store said yes, never read whole.
 */
export async function downloadStream(transfer: Transfer): Promise<AsyncIterable<Buffer>> {
  const sending = send(transfer, {});
  sending.request.end();
  const response = await sending;
  if ((response.statusCode ?? 0) >= 300) throw await refusal(response, 'the download');
  return response;
}

/** A file's size and SHA-256, read as a stream. */
export async function digestOfFile(
  file: string,
): Promise<{ readonly bytes: number; readonly sha256: string }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of createReadStream(file)) {
    bytes += (chunk as Buffer).length;
    hash.update(chunk as Buffer);
  }
  return { bytes, sha256: hash.digest('hex') };
}
