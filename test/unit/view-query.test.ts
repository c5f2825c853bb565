import type { APIGatewayProxyEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { problemsFrom } from '../../lib/server/api/problem.ts';
import { cursorOf, viewQueryOf } from '../../lib/server/api/view-query.ts';
import { requestErrors } from '../../lib/server/core/request-errors.ts';
import { passes } from '../../lib/server/core/views/view-pages.ts';

/** As every route's edge answers a request that does not read. */
const problemOf = problemsFrom(requestErrors);

const event = (query: Record<string, string>) =>
  ({ queryStringParameters: query }) as unknown as APIGatewayProxyEvent;
const refusal = (query: Record<string, string>) => {
  try {
    viewQueryOf(event(query));
  } catch (error) {
    const problem = problemOf(error);
    if (problem) return `${problem.status} ${problem.code}: ${problem.message}`;
    throw error;
  }
  return 'accepted';
};

describe('the views’ query', () => {
  it('reads filters and a limit, a thousand nodes when none is named', () => {
    expect(viewQueryOf(event({}))).toEqual({ filter: {}, limit: 1000 });
    expect(viewQueryOf(event({ behind: 'true', module: 'web', on: 'role=web', limit: '5' }))).toEqual({
      filter: { behind: true, module: 'web', on: [{ key: 'role', op: '=', value: 'web' }] },
      limit: 5,
    });
  });

  it('starts after the node its cursor names, for the same filters only', () => {
    const cursor = cursorOf('node-00041', { behind: true });

    expect(viewQueryOf(event({ behind: 'true', cursor })).after).toBe('node-00041');
    expect(refusal({ cursor })).toMatch(/^400 bad_cursor: the cursor was given for other filters \(behind\)/);
    expect(refusal({ failed: 'true', cursor })).toMatch(/^400 bad_cursor/);
  });

  it('reads unhealthy=true, whose cursor holds only for unhealthy pages', () => {
    const cursor = cursorOf('node-00007', { unhealthy: true });

    expect(viewQueryOf(event({ unhealthy: 'true' }))).toEqual({ filter: { unhealthy: true }, limit: 1000 });
    expect(viewQueryOf(event({ unhealthy: 'true', cursor })).after).toBe('node-00007');
    expect(refusal({ failed: 'true', cursor })).toMatch(
      /^400 bad_cursor: the cursor was given for other filters \(unhealthy\)/,
    );
    expect(refusal({ unhealthy: 'yes' })).toMatch(/^400 invalid_request/);
  });

  it('reads current=true and unenrolled=true, and keeps the nodes each names on a page', () => {
    expect(viewQueryOf(event({ current: 'true', unenrolled: 'true' })).filter).toEqual({
      current: true,
      unenrolled: true,
    });
    const cursor = cursorOf('node-00003', { unenrolled: true });
    expect(refusal({ current: 'true', cursor })).toMatch(/\(unenrolled\)/);
    const status = (behind: boolean, enrolled: boolean) => ({
      node: 'a',
      enrolled,
      enrolledAt: null,
      sentRevision: null,
      sentAt: null,
      appliedRevision: null,
      appliedAt: null,
      reportState: null,
      behind,
      online: null,
      lastHeard: null,
    });
    expect(passes({ current: true }, status(false, true), [])).toBe(true);
    expect(passes({ current: true }, status(true, true), [])).toBe(false);
    expect(passes({ unenrolled: true }, status(false, false), [])).toBe(true);
    expect(passes({ unenrolled: true }, status(false, true), [])).toBe(false);
  });

  it('refuses a cursor it did not give, and bad limits, filters and selectors', () => {
    const forged = Buffer.from(JSON.stringify({ v: 1, after: 'Not A Name', filter: '' })).toString(
      'base64url',
    );

    expect(refusal({ cursor: 'abc' })).toMatch(/^400 bad_cursor: the cursor is not one this API gave/);
    expect(refusal({ cursor: forged })).toMatch(/^400 bad_cursor/);
    expect(refusal({ cursor: `${cursorOf('a', {})}!` })).toMatch(/^400 bad_cursor/);
    expect(refusal({ limit: '0' })).toMatch(/^400 invalid_request/);
    expect(refusal({ limit: '1001' })).toMatch(/^400 invalid_request/);
    expect(refusal({ behind: 'yes' })).toMatch(/^400 invalid_request/);
    expect(refusal({ on: 'role==web' })).toMatch(/^400 invalid_request: invalid query: on: selector/);
    expect(refusal({ prefix: 'Web' })).toMatch(/^400 invalid_request/);
    expect(refusal({ colour: 'red' })).toMatch(/^400 invalid_request/);
  });
});
