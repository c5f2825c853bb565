import { createHmac, timingSafeEqual } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ExitCode } from '../lib/clients/common/exit-codes.ts';
import type { RolloutRecord } from '../lib/server/core/rollout/record.ts';
import { appliedAsSent, type Bed, enrol, eventually, expectOk, inBed } from './support/bed.ts';

const secret = 'events-bed-secret-0123456789';
const hosts = ['web-1', 'web-2'];

type Received = {
  readonly at: number;
  readonly type: string;
  readonly time: string;
  readonly detail: Record<string, unknown>;
  readonly signed: boolean;
};

/**
 * A receiver as an operator would write one, on a loopback port: it checks `Mesh-Signature`
 * against the body in constant time and keeps what it got and when. While down it answers
 * nothing, holding each request open (the worst a sender can meet), and answers them 503 when
 * it is up again.
 */
async function receiver() {
  const received: Received[] = [];
  const held: ServerResponse[] = [];
  let up = true;
  const server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    if (!up) {
      held.push(response);
      return;
    }
    const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
    const given = Buffer.from(String(request.headers['mesh-signature'] ?? ''));
    const event = JSON.parse(body) as {
      'detail-type': string;
      time: string;
      detail: Record<string, unknown>;
    };
    received.push({
      at: Date.now(),
      type: event['detail-type'],
      time: event.time,
      detail: event.detail,
      signed: given.length === expected.length && timingSafeEqual(given, expected),
    });
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mesh-events`,
    received,
    held,
    setUp(value: boolean) {
      up = value;
      if (up) for (const response of held.splice(0)) response.writeHead(503).end();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of held.splice(0)) response.destroy();
        server.close(() => resolve());
      }),
  };
}

type Hook = Awaited<ReturnType<typeof receiver>>;

/** The first event of a type the receiver got after `from` that `matches`, waited for. */
const receivedOf = (hook: Hook, type: string, from: number, matches: (r: Received) => boolean = () => true) =>
  eventually(`the webhook to receive ${type}`, async () =>
    hook.received.slice(from).find((r) => r.type === type && matches(r)),
  );

/** Pushes a node through the API, a module more each time so there is something to send; answers the ms it took. */
async function timedPushes(bed: Bed, node: string, times: number, tag: string): Promise<number[]> {
  const took: number[] = [];
  for (let i = 0; i < times; i += 1) {
    await bed.api().call('PUT', `/nodes/${node}/modules/${tag}-${i}`, {});
    const started = performance.now();
    await bed.api().call('POST', '/push', { node });
    took.push(performance.now() - started);
  }
  return took;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const ms = (value: number) => `${Math.round(value)} ms`;

/**
 * Events to a signed webhook, end to end (docs/events.md): `npm start` with MESH_EVENTS_WEBHOOK
 * posts push.completed, rollout.halted and node.offline, each validly signed and within 2 s of
 * its change; with the receiver down a push takes what it takes with no webhook at all.
 */
it('posts push.completed, rollout.halted and node.offline signed within 2 s, and never holds a push up', () =>
  inBed('events-webhook', async (bed) => {
    const hook = await receiver();
    try {
      // A control plane with no webhook: what a push takes without events, the baseline.
      await bed.startControlPlane();
      for (const node of hosts) {
        await expectOk(bed.mesh('node', 'add', node), `mesh node add ${node}`);
        await expectOk(bed.mesh('assign', node, 'web'), `assign ${node} web`);
      }
      // a node no rollout claims and no host runs: what its pushes take is the control plane's alone
      await expectOk(bed.mesh('node', 'add', 'solo'), 'mesh node add solo');
      const withoutWebhook = await timedPushes(bed, 'solo', 5, 'plain');
      const first = bed.process('control-plane');
      first.child.kill('SIGTERM');
      await first.exited();

      // The same mesh, now telling the webhook.
      await bed.startControlPlane({ MESH_EVENTS_WEBHOOK: hook.url, MESH_EVENTS_WEBHOOK_SECRET: secret });
      writeFileSync(join(bed.recordDir('web-1'), 'fail-on'), 'web=2.0-bad\n');
      for (const node of hosts) {
        await enrol(bed, node);
        bed.startHost(node);
      }
      await receivedOf(hook, 'node.online', 0, (r) => r.detail.node === 'web-2');

      const pushFrom = hook.received.length;
      await expectOk(bed.mesh('push', '--behind'), 'mesh push --behind');
      const pushed = await receivedOf(hook, 'push.completed', pushFrom);
      await appliedAsSent(bed, hosts);

      const haltFrom = hook.received.length;
      const bad = await bed.mesh('upgrade', 'web', '2.0-bad', '--waves', '1,100%', '--max-failures', '0');
      expect({ exit: bad.code, output: bad.output }).toMatchObject({ exit: ExitCode.rolloutHalted });
      const halted = await receivedOf(hook, 'rollout.halted', haltFrom);
      expect(halted.detail).toMatchObject({ rollout: (bad.json as RolloutRecord).id, wave: 1, waves: 2 });

      const offlineFrom = hook.received.length;
      const host = bed.process('host web-2');
      const killedAt = Date.now();
      host.child.kill('SIGKILL');
      const offline = await receivedOf(hook, 'node.offline', offlineFrom, (r) => r.detail.node === 'web-2');

      const delays = {
        'push.completed': pushed.at - Date.parse(pushed.time),
        'rollout.halted': halted.at - Date.parse(halted.time),
        'node.offline': offline.at - Date.parse(offline.time),
      };
      console.log(
        `events-webhook bed: received after its change ${Object.entries(delays)
          .map(([type, delay]) => `${type} ${ms(delay)}`)
          .join(', ')}; node.offline ${ms(offline.at - killedAt)} after its host was killed`,
      );
      for (const [type, delay] of Object.entries(delays)) expect(delay, type).toBeLessThan(2_000);
      expect(hook.received.filter((r) => !r.signed)).toEqual([]);

      // The receiver down, holding each post unanswered: pushes answer as they do with no webhook.
      hook.setUp(false);
      const downFrom = hook.received.length;
      const withReceiverDown = await timedPushes(bed, 'solo', 5, 'down');
      console.log(
        `events-webhook bed: POST /push median ${ms(median(withReceiverDown))} with the receiver down, ${ms(median(withoutWebhook))} with no webhook (5 each: ${withReceiverDown.map(ms).join(', ')} / ${withoutWebhook.map(ms).join(', ')})`,
      );
      // the pushes answered while their first event's post was still held, unanswered
      expect(hook.held.length).toBeGreaterThan(0);
      expect(hook.received.length).toBe(downFrom);
      hook.setUp(true);
      await eventually('the five pushes told once the receiver is back', async () =>
        hook.received.slice(downFrom).filter((r) => r.type === 'push.completed').length >= 5
          ? true
          : undefined,
      );
      expect(hook.received.filter((r) => !r.signed)).toEqual([]);
    } finally {
      await hook.close();
    }
  }));
