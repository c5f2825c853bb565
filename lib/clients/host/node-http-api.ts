import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { type ApiAnswer, ApiUnreachableError, answerBody } from '../http/api-client.ts';
import type { HeaderReader } from '../http/transport.ts';
import { type HostSigningKey, hostProof } from './proof.ts';

/**
 * The agent's requests to the control plane, over node:http and node:https, each signed with
 * the node's key; the answers are those of the operator CLI's ApiClient (JSON parsed, problems
 * left to the caller, ApiUnreachableError when nothing answers). Not fetch: fetch brings undici
 * and its WebAssembly HTTP parser, which keep an idle agent about 15 MB larger for its whole
 * life (`npm run bench -- agent-footprint` measures both).
 */
export class NodeHttpHostApi {
  readonly baseUrl: string;
  private key: HostSigningKey;
  private readonly timeoutMs: number;

  constructor(baseUrl: string, key: HostSigningKey, options: { timeoutMs?: number } = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.key = key;
    this.timeoutMs = options.timeoutMs ?? 15_000;
  }

  /** Signs from now on with `key`: the node's key after a rotation. */
  useKey(key: HostSigningKey): void {
    this.key = key;
  }

  async send(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer> {
    const url = new URL(`${this.baseUrl}${path}`);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const authorization = await hostProof(this.key, { method, url: url.href, body: payload ?? '' });
    try {
      const answer = await exchange(url, {
        method,
        headers: {
          accept: 'application/json',
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }
            : {}),
          ...headers,
          authorization,
        },
        payload,
        timeoutMs: this.timeoutMs,
      });
      return { status: answer.status, headers: headerReader(answer.headers), body: answerBody(answer.text) };
    } catch (error) {
      const reason =
        (error as Error).name === 'AbortError'
          ? `no answer in ${this.timeoutMs / 1000} s`
          : ((error as NodeJS.ErrnoException).code ?? (error as Error).name);
      throw new ApiUnreachableError(
        `the control plane at ${this.baseUrl} could not be reached (${reason})`,
        reason,
      );
    }
  }
}

type Exchange = {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly payload: string | undefined;
  readonly timeoutMs: number;
};

function exchange(url: URL, options: Exchange) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; text: string }>((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      url,
      { method: options.method, headers: options.headers, signal: AbortSignal.timeout(options.timeoutMs) },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(options.payload);
  });
}

function headerReader(headers: IncomingHttpHeaders): HeaderReader {
  return {
    get(name) {
      const value = headers[name.toLowerCase()];
      if (value === undefined) return null;
      return Array.isArray(value) ? value.join(', ') : value;
    },
  };
}
