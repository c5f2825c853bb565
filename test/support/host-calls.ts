import { expect } from 'vitest';
import { hostApiClient } from '../../lib/clients/host/host-api-client.ts';
import { type NodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';

/** An operator's calls to the local API at `api`, and a host's, as the host-identity tests make them. */
export function hostCalls(api: string) {
  const operator = async (method: string, path: string, body?: unknown) => {
    const answer = await fetch(`${api}${path}`, {
      method,
      ...(body !== undefined
        ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
        : {}),
    });
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  /** Issues the node's token (the node exists) and enrols `keys` with it; answers the token. */
  const enrol = async (node: string, keys: NodeKeys): Promise<string> => {
    const { body } = await operator('POST', `/nodes/${node}/token`, {});
    const answer = await fetch(`${api}/enrol`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        node,
        token: body.token,
        keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
      }),
    });
    expect(answer.status).toBe(200);
    return body.token as string;
  };
  /** Whether the control plane takes `keys` for the node: the status and code of a signed fetch. */
  const fetchAs = async (node: string, keys: NodeKeys) => {
    const answer = await hostApiClient(api, signingKeyOf(node, keys)).send(
      'GET',
      `/hosts/${node}/declaration`,
    );
    return `${answer.status} ${(answer.body as { error?: { code: string } })?.error?.code ?? 'ok'}`;
  };
  return { operator, enrol, fetchAs };
}
