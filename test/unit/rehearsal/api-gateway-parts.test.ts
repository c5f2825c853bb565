import { describe, expect, it } from 'vitest';
import { policyVerdict } from '../../../tools/rehearsal/api-authorizers.ts';
import { matchResource } from '../../../tools/rehearsal/api-events.ts';
import type { GatewayResponseModel, ResourceNode } from '../../../tools/rehearsal/api-model.ts';
import { gatewayAnswer, unrenderableParts } from '../../../tools/rehearsal/gateway-responses.ts';

const node = (pathPart: string, path: string, children: ResourceNode[] = []): ResourceNode => ({
  pathPart,
  path,
  children,
  methods: new Map(),
});

describe('matchResource', () => {
  const root = node('', '/', [
    node('nodes', '/nodes', [
      node('{node}', '/nodes/{node}', [node('declaration', '/nodes/{node}/declaration')]),
      node('spare', '/nodes/spare'),
    ]),
    node('files', '/files', [node('{path+}', '/files/{path+}')]),
  ]);

  it('takes a literal segment before a path parameter, as API Gateway does', () => {
    expect(matchResource(root, ['nodes', 'spare'])?.node.path).toBe('/nodes/spare');
    expect(matchResource(root, ['nodes', 'app', 'declaration'])).toMatchObject({
      node: { path: '/nodes/{node}/declaration' },
      pathParameters: { node: 'app' },
    });
  });

  it('lets a greedy parameter take the rest of the path', () => {
    expect(matchResource(root, ['files', 'a', 'b'])).toMatchObject({ pathParameters: { path: 'a/b' } });
  });

  it('matches nothing for a path with no resource', () => {
    expect(matchResource(root, ['nodes', 'app', 'other'])).toBeUndefined();
  });
});

describe('gatewayAnswer', () => {
  const problem = '{"error":{"code":"$context.error.responseType","message":$context.error.messageString}}';
  const responses = new Map<string, GatewayResponseModel>([
    ['DEFAULT_4XX', { statusCode: undefined, templates: { 'application/json': problem }, headers: {} }],
    [
      'AUTHORIZER_CONFIGURATION_ERROR',
      {
        statusCode: '503',
        templates: { 'application/json': '{"error":{"code":"try_again"}}' },
        headers: { 'Retry-After': '2' },
      },
    ],
  ]);

  it('renders the family’s template with the type’s own status when the type has none of its own', () => {
    const answer = gatewayAnswer(responses, { type: 'UNAUTHORIZED', message: 'Unauthorized', values: {} });
    expect(answer.status).toBe(401);
    expect(JSON.parse(answer.body)).toEqual({ error: { code: 'UNAUTHORIZED', message: 'Unauthorized' } });
  });

  it('uses a type’s own response whole: status, template and headers', () => {
    const answer = gatewayAnswer(responses, {
      type: 'AUTHORIZER_CONFIGURATION_ERROR',
      message: 'x',
      values: {},
    });
    expect(answer).toMatchObject({
      status: 503,
      body: '{"error":{"code":"try_again"}}',
      headers: { 'Retry-After': '2' },
    });
  });

  it('falls back to API Gateway’s own message without a gateway response', () => {
    const answer = gatewayAnswer(new Map(), { type: 'THROTTLED', message: 'Too Many Requests', values: {} });
    expect(answer).toMatchObject({ status: 429, body: '{"message":"Too Many Requests"}' });
  });

  it('finds the template parts it cannot render', () => {
    expect(unrenderableParts('{"id":"$context.requestId","x":"$input.body"} #if($a)')).toEqual([
      '$input.body',
      '$a',
      '#if',
    ]);
    expect(unrenderableParts(problem)).toEqual([]);
  });
});

describe('policyVerdict', () => {
  const methodArn = 'arn:aws:execute-api:eu-west-1:000000000000:abc/v1/GET/hosts/app/declaration';
  const statement = (Effect: string, Resource: string) => ({
    Effect,
    Action: 'execute-api:Invoke',
    Resource,
  });

  it('allows on a matching Allow, and any matching Deny wins', () => {
    expect(policyVerdict({ policyDocument: { Statement: [statement('Allow', methodArn)] } }, methodArn)).toBe(
      'allow',
    );
    const both = [statement('Allow', 'arn:aws:execute-api:*'), statement('Deny', methodArn)];
    expect(policyVerdict({ policyDocument: { Statement: both } }, methodArn)).toBe('deny');
  });

  it('gives nothing for a policy about another method', () => {
    const other = statement('Allow', methodArn.replace('/app/', '/web/'));
    expect(policyVerdict({ policyDocument: { Statement: [other] } }, methodArn)).toBe('none');
  });
});
