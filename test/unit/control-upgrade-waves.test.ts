import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { controlUpgradeHandler } from '../../lib/server/api/handlers/control.ts';
import { RecordingSender } from '../support/control-fakes.ts';

const now = new Date('2026-10-01T12:00:00Z');

/** The modules an upgrade may name here: `web`, assigned to some node. */
const moduleVersions = { isKnown: async (module: string) => module === 'web' };

async function post(sender: RecordingSender, body: unknown): Promise<APIGatewayProxyResult> {
  const handler = controlUpgradeHandler({ sender, now: () => now, moduleVersions });
  return handler(
    { body: JSON.stringify(body), headers: {}, isBase64Encoded: false } as unknown as APIGatewayProxyEvent,
    {} as Context,
  );
}

describe('POST /upgrades in waves', () => {
  it('carries the rollout it starts in the message, and answers its id', async () => {
    // Prepare
    const sender = new RecordingSender();
    // Act
    const answer = await post(sender, { module: 'web', version: '2.0', waves: '1,100%', maxFailures: '10%' });
    // Assess
    expect(answer.statusCode).toBe(202);
    const { rollout } = JSON.parse(answer.body) as { rollout: string };
    expect(rollout).toMatch(/^20261001T120000000Z-[0-9a-f]{6}$/);
    expect(sender.sent.map((outgoing) => outgoing.message.body)).toEqual([
      { module: 'web', version: '2.0', rollout: { id: rollout, waves: '1,100%', maxFailures: '10%' } },
    ]);
  });

  it('refuses waves it cannot read with 400 rollout_usage, queueing nothing; no waves is the upgrade of before', async () => {
    // Prepare
    const sender = new RecordingSender();
    // Act
    const bad = await post(sender, { module: 'web', version: '2.0', waves: '10%,5%' });
    const plain = await post(sender, { module: 'web', version: '2.0' });
    // Assess
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body).error).toMatchObject({ code: 'rollout_usage' });
    expect(JSON.parse(plain.body)).toEqual({
      queued: expect.anything(),
      upgrade: { module: 'web', version: '2.0' },
    });
    expect(sender.sent.map((outgoing) => outgoing.message.body)).toEqual([{ module: 'web', version: '2.0' }]);
  });

  it('refuses a module no node was ever assigned with 404 module_not_found, queueing nothing, with waves or without', async () => {
    const sender = new RecordingSender();
    for (const body of [
      { module: 'nginxx', version: '1.0' },
      { module: 'nginxx', version: '1.0', waves: '1,100%' },
    ]) {
      const answer = await post(sender, body);
      expect(answer.statusCode).toBe(404);
      expect(JSON.parse(answer.body).error).toMatchObject({
        code: 'module_not_found',
        message: 'no module named nginxx: assign it to a node before upgrading it',
      });
    }
    expect(sender.sent).toEqual([]);
  });
});
