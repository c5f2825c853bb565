import { generateNodeKeys, type NodeKeys } from '../../lib/clients/host/keys.ts';
import { mapLimit } from '../../lib/server/core/map-limit.ts';
import type { SignalChannel } from '../../lib/server/core/signal/channel.ts';

/** One operator request to a local control plane (which authenticates no one); its answer's body. */
export async function operatorCall(
  api: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const answer = await fetch(`${api}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await answer.text();
  if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * A fleet for the benches' in-process agents (agents.ts): each node added, given a token, enrolled
 * with new keys over the API as `mesh-host enrol` does (8 at a time), assigned `app`, then all
 * pushed. Returns each node's keys and signal channel, which `startAgents` takes.
 */
export async function enrolledFleet(
  api: string,
  nodes: readonly string[],
): Promise<{ readonly keys: Map<string, NodeKeys>; readonly channels: Map<string, SignalChannel> }> {
  const keys = new Map<string, NodeKeys>();
  const channels = new Map<string, SignalChannel>();
  await mapLimit(nodes, 8, async (node) => {
    await operatorCall(api, 'POST', '/nodes', { node });
    const { token } = (await operatorCall(api, 'POST', `/nodes/${node}/token`, {})) as { token: string };
    const { keys: generated } = await generateNodeKeys();
    const signing = generated.signing.publicJwk;
    const sealing = generated.sealing.publicJwk;
    const answer = (await operatorCall(api, 'POST', '/enrol', {
      node,
      token,
      keys: { signing, sealing },
    })) as {
      signal: SignalChannel | null;
    };
    if (!answer.signal) throw new Error('the enrolment answer named no broker');
    keys.set(node, generated);
    channels.set(node, answer.signal);
  });
  for (const node of nodes) await operatorCall(api, 'PUT', `/nodes/${node}/modules/app`, {});
  await operatorCall(api, 'POST', '/push', { behind: true, maxRounds: 50 });
  return { keys, channels };
}
