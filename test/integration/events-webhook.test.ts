import { createHmac } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import { signatureOf, WebhookEventSink } from '../../lib/server/adapters/events/webhook-sink.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { checkConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { provisionTestResources } from '../support/resources.ts';

const secret = 'a-secret-of-sixteen-or-more';

type Received = { readonly at: number; readonly body: string; readonly signature: string | undefined };

/**
 * A receiver on a loopback port: what it got, when, and whether it is up. While down it holds each
 * request unanswered (a sender that waited on it would wait for ever), and answers them 503 when up.
 */
async function receiver() {
  const received: Received[] = [];
  const held: ServerResponse[] = [];
  let up = true;
  const server: Server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    if (!up) {
      held.push(response);
      return;
    }
    received.push({
      at: Date.now(),
      body,
      signature: request.headers['mesh-signature'] as string | undefined,
    });
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    received,
    held,
    setUp: (value: boolean) => {
      up = value;
      if (up) for (const response of held.splice(0)) response.writeHead(503).end();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const typesOf = (received: readonly Received[]) => received.map((r) => JSON.parse(r.body)['detail-type']);
const validlySigned = (r: Received) =>
  r.signature === `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`;

describe('events to a signed webhook (MESH_EVENTS_WEBHOOK)', () => {
  let hook: Awaited<ReturnType<typeof receiver>>;
  let parts: LocalParts;
  beforeAll(async () => {
    hook = await receiver();
    const resources = await provisionTestResources('events');
    parts = localPartsFor(checkConfig({ ...resources, eventsWebhook: { url: hook.url, secret } }), {
      overrides: { log: new RecordingLog() },
    });
  });
  afterAll(() => hook.close());

  it('posts push.completed and node.offline, signed over the body, within 2 s of each', async () => {
    await parts.meshService.addNode('ev-web', {}, localActor());
    await parts.meshService.assign('ev-web', 'nginx', null, localActor());
    await parts.pushFlow.push({ node: 'ev-web' });
    // the push is done when it answers: its event is posted by then or within 2 s
    const pushed = Date.now();
    await expect.poll(() => typesOf(hook.received), { timeout: 2_000 }).toContain('push.completed');
    const push = hook.received.find(
      (r) => JSON.parse(r.body)['detail-type'] === 'push.completed',
    ) as Received;
    expect(push.at - pushed).toBeLessThan(2_000);
    expect(validlySigned(push)).toBe(true);
    expect(JSON.parse(push.body)).toMatchObject({
      source: 'mesh',
      detail: { pushed: 'ev-web', consistent: true, node: 'ev-web' },
    });

    const now = Date.now();
    await parts.presence.recordPresence({ node: 'ev-web', state: 'disconnected', atMs: now, version: now });
    await expect.poll(() => typesOf(hook.received), { timeout: 2_000 }).toContain('node.offline');
    const offline = hook.received.find(
      (r) => JSON.parse(r.body)['detail-type'] === 'node.offline',
    ) as Received;
    expect(offline.at - now).toBeLessThan(2_000);
    expect(validlySigned(offline)).toBe(true);
    expect(JSON.parse(offline.body).detail).toEqual({ node: 'ev-web' });
  });

  it('never holds a push up while the receiver is down, and delivers once it is back', async () => {
    hook.setUp(false);
    const before = hook.received.length;
    await parts.meshService.assign('ev-web', 'cron', null, localActor());
    const outcome = await parts.pushFlow.push({ node: 'ev-web' });
    expect(outcome.pushed?.node).toBe('ev-web');
    // the push answered while its event's delivery is still held by the receiver: never waited on
    await expect.poll(() => hook.held.length, { timeout: 5_000 }).toBeGreaterThan(0);
    expect(hook.received.length).toBe(before);
    hook.setUp(true);
    await expect
      .poll(() => typesOf(hook.received.slice(before)), { timeout: 5_000 })
      .toEqual(['push.completed']);
  });

  it('keeps at most its capacity waiting, and says each one it let go', async () => {
    const log = new RecordingLog();
    const sink = new WebhookEventSink({ url: 'http://127.0.0.1:9/', secret, log, capacity: 2, tries: 1 });
    const event = { type: 'node.online' as const, time: new Date().toISOString(), detail: { node: 'x' } };
    const started = performance.now();
    await sink.publish([event, event, event, event, event]);
    expect(performance.now() - started).toBeLessThan(50);
    await sink.settled();
    const said = log.lines.map((line) => JSON.stringify(line));
    // two wait at a time: of five, three are let go on the spot, and the two kept fail their one try
    expect(said.filter((line) => line.includes('dropped'))).toHaveLength(3);
    expect(said.filter((line) => line.includes('not delivered'))).toHaveLength(2);
    expect(signatureOf(secret, 'x')).toMatch(/^sha256=[0-9a-f]{64}$/);
  });
});
