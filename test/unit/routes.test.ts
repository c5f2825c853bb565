import { describe, expect, it } from 'vitest';
import { matchRoute } from '../../lib/server/functions/routes.ts';
import type { Route } from '../../lib/server/functions/table.ts';

const table: Route[] = [
  { method: 'GET', path: '/nodes/{node}', handler: 'a', auth: 'operator' },
  { method: 'GET', path: '/nodes/status', handler: 'b', auth: 'operator' },
  { method: 'POST', path: '/nodes', handler: 'c', auth: 'operator' },
];

describe('matchRoute', () => {
  it('fills path parameters', () => {
    expect(matchRoute(table, 'GET', '/nodes/alpha')).toEqual({
      route: table[0],
      pathParameters: { node: 'alpha' },
    });
  });
  it('prefers a literal segment over a parameter, as API Gateway does', () => {
    expect(matchRoute(table, 'GET', '/nodes/status')).toMatchObject({ route: { handler: 'b' } });
  });
  it('says which methods a known path allows', () => {
    expect(matchRoute(table, 'DELETE', '/nodes')).toEqual({ allowed: ['POST'] });
  });
  it('finds nothing for an unknown path', () => {
    expect(matchRoute(table, 'GET', '/elsewhere')).toBeUndefined();
  });
});
