import { describe, expect, it } from 'vitest';
import { roleNeededFromTable } from '../../lib/clients/cli/role-needed.ts';
import { ApiClient, type ApiProblemError } from '../../lib/clients/http/api-client.ts';

/** What API Gateway answers a signed request IAM does not allow, through the stack's gateway response. */
const iamRefusal = (resource: string) =>
  new Response(
    JSON.stringify({
      error: {
        code: 'ACCESS_DENIED',
        message: `User: arn:aws:sts::123456789012:assumed-role/viewer/ana is not authorized to perform: execute-api:Invoke on resource: ${resource}`,
      },
    }),
    { status: 403, headers: { 'content-type': 'application/json' } },
  );

const clientAnswering = (answer: () => Response) =>
  new ApiClient('https://abc.execute-api.eu-west-1.amazonaws.com/v1', {
    fetch: (async () => answer()) as typeof fetch,
    roleNeeded: roleNeededFromTable,
  });

const refusalOf = async (call: Promise<unknown>) => {
  try {
    await call;
  } catch (error) {
    return error as ApiProblemError;
  }
  throw new Error('expected the call to be refused');
};

describe('on IAM’s refusal, mesh names the role the call needs', () => {
  it('names MeshAdmin for a token, MeshOperator for a push, from the route table', async () => {
    const token = await refusalOf(
      clientAnswering(() => iamRefusal('arn:aws:execute-api:eu-west-1:1:abc/v1/POST/nodes/alpha/token')).call(
        'POST',
        '/nodes/alpha/token',
        {},
      ),
    );
    expect(token.status).toBe(403);
    expect(token.code).toBe('ACCESS_DENIED');
    expect(token.needs).toEqual({ role: 'admin', route: 'POST /nodes/{node}/token' });
    expect(token.message).toMatch(/: POST \/nodes\/\{node\}\/token needs the MeshAdmin role \(or higher\)$/);

    const push = await refusalOf(
      clientAnswering(() => iamRefusal('arn:aws:execute-api:eu-west-1:1:abc/v1/POST/push')).call(
        'POST',
        '/push?wait=1',
        {},
      ),
    );
    expect(push.needs).toEqual({ role: 'operator', route: 'POST /push' });
  });

  it('names no role for a handler’s own 403, or for a route no role guards', async () => {
    const own = await refusalOf(
      clientAnswering(
        () => new Response(JSON.stringify({ error: { code: 'forbidden', message: 'no' } }), { status: 403 }),
      ).call('POST', '/nodes/alpha/token', {}),
    );
    expect(own.needs).toBeUndefined();
    expect(own.message).toBe('no');

    const host = await refusalOf(
      clientAnswering(() =>
        iamRefusal('arn:aws:execute-api:eu-west-1:1:abc/v1/POST/hosts/alpha/reports'),
      ).call('POST', '/hosts/alpha/reports', {}),
    );
    expect(host.needs).toBeUndefined();
  });

  it('asks nothing of the table when the client is given no lookup (mesh-host)', async () => {
    const client = new ApiClient('https://abc.execute-api.eu-west-1.amazonaws.com/v1', {
      fetch: (async () => iamRefusal('x')) as typeof fetch,
    });
    expect((await refusalOf(client.call('POST', '/push', {}))).needs).toBeUndefined();
  });
});
