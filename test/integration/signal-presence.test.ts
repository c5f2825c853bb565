import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { PresenceOfUnknownNodeError, StalePresenceError } from '../../lib/server/core/signal/errors.ts';
import { type PresenceEvent, versionTrustMs } from '../../lib/server/core/signal/presence.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';

/** Newer wins, on DynamoDB Local: the presence item's conditional write, as lifecycle events arrive out of order. */
let parts: Parts;
// After every node of the file is added: an event from before its node was added is refused.
const t0 = Date.now() + 60_000;

beforeAll(async () => {
  parts = localPartsFor(await provisionTestResources('presence'));
});

const event = (
  node: string,
  state: PresenceEvent['state'],
  atMs: number,
  version: number,
): PresenceEvent => ({
  node,
  state,
  atMs,
  version,
});
const onlineOf = async (node: string) => {
  const status = (await parts.statusReader.status()).find((entry) => entry.node === node);
  return { online: status?.online, lastHeard: status?.lastHeard };
};
const stale = (write: Promise<void>) => expect(write).rejects.toBeInstanceOf(StalePresenceError);

describe('DynamoDBPresenceStore', () => {
  it("keeps a reconnect's connect over the late disconnect of the connection before it", async () => {
    await parts.meshService.addNode('p-1', {}, localActor());
    await parts.presence.recordPresence(event('p-1', 'connected', t0, 1));
    await parts.presence.recordPresence(event('p-1', 'connected', t0 + 2_000, 2));

    await stale(parts.presence.recordPresence(event('p-1', 'disconnected', t0 + 3_000, 1)));

    expect(await onlineOf('p-1')).toEqual({ online: true, lastHeard: new Date(t0 + 2_000).toISOString() });
  });

  it('takes the disconnect of the same connection, and ignores a connect that comes in after it', async () => {
    await parts.meshService.addNode('p-2', {}, localActor());
    await parts.presence.recordPresence(event('p-2', 'disconnected', t0 + 5_000, 4));

    await stale(parts.presence.recordPresence(event('p-2', 'connected', t0, 4)));
    await stale(parts.presence.recordPresence(event('p-2', 'disconnected', t0 + 5_000, 4)));

    expect(await onlineOf('p-2')).toEqual({ online: false, lastHeard: new Date(t0 + 5_000).toISOString() });
  });

  it('believes a much newer event whose version started over (a broker that forgot the client)', async () => {
    await parts.meshService.addNode('p-3', {}, localActor());
    await parts.presence.recordPresence(event('p-3', 'disconnected', t0, 900));

    await stale(parts.presence.recordPresence(event('p-3', 'connected', t0 + 60_000, 1)));
    await parts.presence.recordPresence(event('p-3', 'connected', t0 + versionTrustMs + 1, 1));

    expect((await onlineOf('p-3')).online).toBe(true);
  });

  it('writes nothing for a node the mesh does not have', async () => {
    await expect(parts.presence.recordPresence(event('p-ghost', 'connected', t0, 1))).rejects.toBeInstanceOf(
      PresenceOfUnknownNodeError,
    );
    await parts.meshService.addNode('p-ghost', {}, localActor());

    expect(await onlineOf('p-ghost')).toEqual({ online: null, lastHeard: null });
  });
});
