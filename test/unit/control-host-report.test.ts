import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { generateNodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { hostProof } from '../../lib/clients/host/proof.ts';
import { hostReportHandler } from '../../lib/server/api/handlers/host.ts';
import type { ControlSender } from '../../lib/server/core/control/ports.ts';
import type { ProofReplayGuard } from '../../lib/server/core/host-identity/ports.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import { RecordingSender } from '../support/control-fakes.ts';
import { InMemoryNodeCredentials } from '../support/node-credentials.ts';

const now = new Date('2026-10-01T12:00:00Z');
const base = 'https://api.example.test';

const replayGuard: ProofReplayGuard = { rememberOnce: async () => true };

async function setup(sender: ControlSender = new RecordingSender()) {
  const credentials = new InMemoryNodeCredentials();
  const { keys } = await generateNodeKeys();
  credentials.enrol('alpha', keys);
  const handler = hostReportHandler({ sender, credentials, replayGuard, now: () => now });
  const post = async (node: string, body: unknown, signed = true): Promise<APIGatewayProxyResult> => {
    const text = JSON.stringify(body);
    const path = `/hosts/${node}/reports`;
    const authorization = signed
      ? await hostProof(
          signingKeyOf('alpha', keys),
          { method: 'POST', url: `${base}${path}`, body: text },
          { now: () => now },
        )
      : undefined;
    const event = {
      httpMethod: 'POST',
      path,
      resource: '/hosts/{node}/reports',
      headers: authorization ? { Authorization: authorization } : {},
      multiValueHeaders: {},
      pathParameters: { node },
      queryStringParameters: null,
      multiValueQueryStringParameters: null,
      body: text,
      isBase64Encoded: false,
      requestContext: { path },
    } as unknown as APIGatewayProxyEvent;
    return handler(event, {} as Context);
  };
  return { post, thumbprint: keys.thumbprint };
}

const report = { sequence: 7, state: 'applied', revision: 3, sentAt: now.toISOString() };
const code = (result: APIGatewayProxyResult) =>
  (JSON.parse(result.body) as { error: { code: string } }).error.code;

describe('POST /hosts/{node}/reports', () => {
  it('queues the signed report under report:<node>, deduplicated on node and sequence', async () => {
    const sender = new RecordingSender();
    const { post } = await setup(sender);

    const result = await post('alpha', report);

    expect(result.statusCode).toBe(202);
    expect(JSON.parse(result.body)).toEqual({
      queued: { subject: 'report:alpha', messageId: expect.any(String) },
    });
    expect(sender.sent).toEqual([
      {
        message: {
          type: 'report',
          subject: 'report:alpha',
          sentAt: now.toISOString(),
          body: { node: 'alpha', ...report },
        },
        deduplicationId: 'report-alpha-7',
      },
    ]);
  });

  it('refuses an unsigned report (401) and another node’s (403), queueing nothing', async () => {
    const sender = new RecordingSender();
    const { post } = await setup(sender);

    expect((await post('alpha', report, false)).statusCode).toBe(401);
    expect((await post('beta', report)).statusCode).toBe(403);
    expect(sender.sent).toEqual([]);
  });

  it('answers 400 naming what is wrong with the body, queueing nothing', async () => {
    const sender = new RecordingSender();
    const { post } = await setup(sender);

    const result = await post('alpha', { ...report, state: 'dancing' });

    expect(result.statusCode).toBe(400);
    expect(code(result)).toBe('invalid_request');
    expect(result.body).toContain('state');
    expect(sender.sent).toEqual([]);
  });

  it('queues health and the outputs as the host sent them; a revert names the key that sent it, for its audit record', async () => {
    const sender = new RecordingSender();
    const { post, thumbprint } = await setup(sender);
    const health = { state: 'unhealthy', check: true, revision: 4, reason: 'curl: (7) refused' };
    const output = { apply: 'restarting web\n', check: 'curl: (7) refused\n' };
    const revert = { to: 3, cause: 'unhealthy', ok: true, modules: { web: '1.0' } };

    const healthy = await post('alpha', { ...report, state: 'heartbeat', revision: 3, health, output });
    const reverted = await post('alpha', {
      ...report,
      sequence: 8,
      state: 'failed',
      revision: 4,
      step: 'unhealthy: curl: (7) refused',
      health,
      output,
      revert,
    });

    expect([healthy.statusCode, reverted.statusCode]).toEqual([202, 202]);
    expect(sender.sent[0]?.message).toMatchObject({ body: { health, output } });
    expect(sender.sent[0]?.message).not.toHaveProperty('by');
    expect(sender.sent[1]?.message).toMatchObject({
      body: { revert },
      by: { principal: `key:${thumbprint}` },
    });
  });

  it('answers 400 to an output past 4 KiB in all, with an escape sequence, or without health, and to a revert that is not a failure', async () => {
    const sender = new RecordingSender();
    const { post } = await setup(sender);
    const health = { state: 'healthy', check: true, revision: 3 };
    const failed = { ...report, state: 'failed', revision: 4, step: 'apply: exited 1' };

    const refused = await Promise.all([
      post('alpha', { ...report, health, output: { apply: 'a'.repeat(2100), check: 'c'.repeat(2000) } }),
      post('alpha', { ...report, health, output: { check: 'é'.repeat(2049) } }),
      post('alpha', { ...report, health, output: { check: 'ok \u001b[2J' } }),
      post('alpha', { ...report, health: { ...health, reason: 'two\nlines' } }),
      post('alpha', { ...report, health: { ...health, colour: 'green' } }),
      post('alpha', { ...report, output: { check: 'no health beside it' } }),
      post('alpha', { ...report, health, revert: { to: 2, cause: 'failed', ok: true } }),
      post('alpha', { ...failed, health, revert: { to: 4, cause: 'failed', ok: true } }),
      post('alpha', { ...failed, health, revert: { to: 2, cause: 'bored', ok: true } }),
    ]);
    const fits = await post('alpha', {
      ...report,
      health,
      output: { apply: 'a'.repeat(2096), check: 'c'.repeat(2000) },
    });

    expect(refused.map((result) => result.statusCode)).toEqual(Array(9).fill(400));
    expect(refused[0]?.body).toContain('4096 bytes together');
    expect(refused[2]?.body).toContain('no control character');
    expect(fits.statusCode).toBe(202);
    expect(sender.sent).toHaveLength(1);
  });

  it('answers 422 sequence_ahead to a report far ahead of the clock, saying the bound, queueing nothing', async () => {
    const sender = new RecordingSender();
    const { post } = await setup(sender);
    const latestAccepted = now.getTime() + 10 * 60_000;

    const ahead = await post('alpha', { ...report, sequence: 9e15 });
    const atTheBound = await post('alpha', { ...report, sequence: latestAccepted });

    expect(ahead.statusCode).toBe(422);
    expect(JSON.parse(ahead.body)).toEqual({
      error: {
        code: 'sequence_ahead',
        message: expect.stringContaining('ahead of the clock'),
        details: { sequence: 9e15, latestAccepted },
      },
    });
    expect(atTheBound.statusCode).toBe(202);
    expect(sender.sent.map((outgoing) => outgoing.deduplicationId)).toEqual([
      `report-alpha-${latestAccepted}`,
    ]);
  });

  it('answers 503 try again with Retry-After when the queue cannot take it', async () => {
    const { post } = await setup({
      send: async () => {
        throw new StoreUnavailableError('putting messages on the control queue');
      },
    });

    const result = await post('alpha', report);

    expect(result.statusCode).toBe(503);
    expect(code(result)).toBe('try_again');
    expect(result.headers?.['retry-after']).toBe('2');
  });
});
