import { ApiClient } from '../http/api-client.ts';
import { nodeHttpTransport } from '../http/node-http-transport.ts';
import { type HostSigningKey, hostRequestSigner } from './proof.ts';

/** How long a node waits for an answer: a fetch or a report is small, and the loop asks again. */
export const hostRequestTimeoutMs = 15_000;

/**
 * A node's client of the control plane: the ApiClient over node:http(s) (nodeHttpTransport says
 * why not fetch), every request signed with the node's key. After a key rotation,
 * `useSigner(hostRequestSigner(newKey))` signs with the new key.
 */
export function hostApiClient(
  api: string,
  key: HostSigningKey,
  options: { readonly timeoutMs?: number } = {},
): ApiClient {
  return new ApiClient(api, {
    transport: nodeHttpTransport,
    signer: hostRequestSigner(key),
    timeoutMs: options.timeoutMs ?? hostRequestTimeoutMs,
  });
}
