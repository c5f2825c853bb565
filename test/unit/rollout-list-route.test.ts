import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { rolloutListHandler } from '../../lib/server/api/handlers/rollouts.ts';
import type { RolloutStore } from '../../lib/server/core/rollout/ports.ts';

describe('GET /rollouts names its continuation next, as every page does', () => {
  it('answers next (and cursor, the same, for the scripts that read it) while there is more, neither on the last page', async () => {
    const list = async (page: { limit: number; cursor?: string }) =>
      page.cursor ? { rollouts: [] } : { rollouts: [], cursor: '20261205T120000000Z-abcdef' };
    const handler = rolloutListHandler({ rolloutStore: { list } as unknown as RolloutStore });
    const get = async (query: Record<string, string>) =>
      JSON.parse(
        (
          await handler(
            { queryStringParameters: query, headers: {}, body: null } as unknown as APIGatewayProxyEvent,
            {} as Context,
          )
        ).body,
      );
    expect(await get({ limit: '1' })).toEqual({
      rollouts: [],
      next: '20261205T120000000Z-abcdef',
      cursor: '20261205T120000000Z-abcdef',
    });
    expect(await get({ limit: '1', cursor: '20261205T120000000Z-abcdef' })).toEqual({ rollouts: [] });
  });
});
