import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { controlBuildHandler } from '../../lib/server/api/handlers/control.ts';
import { RecordingSender } from '../support/control-fakes.ts';

const now = new Date('2026-10-01T12:00:00Z');

async function post(sender: RecordingSender, body: unknown): Promise<APIGatewayProxyResult> {
  const handler = controlBuildHandler({ sender, now: () => now });
  return handler(
    { body: JSON.stringify(body), headers: {}, isBase64Encoded: false } as unknown as APIGatewayProxyEvent,
    {} as Context,
  );
}

describe('POST /builds', () => {
  it('answers 422 finished_at_out_of_bounds to a build finished in the future or long ago, queueing nothing', async () => {
    // Prepare
    const sender = new RecordingSender();
    const build = { module: 'web', version: '1.0' };
    // Act
    const future = await post(sender, { ...build, finishedAt: '9999-12-31T00:00:00Z' });
    const ancient = await post(sender, { ...build, finishedAt: '1970-01-01T00:00:00Z' });
    const skewed = await post(sender, { ...build, finishedAt: '2026-10-01T12:04:00Z' });
    // Assess
    for (const refused of [future, ancient]) {
      expect(refused.statusCode).toBe(422);
      expect(JSON.parse(refused.body).error).toMatchObject({
        code: 'finished_at_out_of_bounds',
        details: { earliest: '2026-09-01T12:00:00.000Z', latest: '2026-10-01T12:05:00.000Z' },
      });
    }
    expect(skewed.statusCode).toBe(202);
    expect(sender.sent.map((outgoing) => outgoing.message.body)).toEqual([
      expect.objectContaining({ finishedAt: '2026-10-01T12:04:00Z' }),
    ]);
  });
});
