import type { APIGatewayProxyEvent } from 'aws-lambda';
import { headerValue, type RoutedRequest, requestAuthorizerEvent } from './api-events.ts';
import type { ApiModel, AuthorizerModel } from './api-model.ts';
import type { IamCheck } from './iam-check.ts';
import { LambdaInvocationError, type LambdaService } from './lambda-service.ts';
import type { RehearsalLedger } from './ledger.ts';
import { RehearsalProblem } from './problems.ts';

/** The outcome of a Lambda authorizer: the context handed on, or API Gateway's refusal. */
export type AuthorizerOutcome =
  | { readonly allowed: true; readonly context: Record<string, unknown> }
  | { readonly allowed: false; readonly type: string; readonly message: string };

type AuthorizerAnswer = {
  principalId?: unknown;
  policyDocument?: {
    Statement?: Array<{ Effect?: string; Action?: string | string[]; Resource?: string | string[] }>;
  };
  context?: Record<string, unknown>;
};

const pattern = (text: string) =>
  new RegExp(
    `^${text
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replaceAll('*', '.*')
      .replaceAll('?', '.')}$`,
  );
const list = (value: string | string[] | undefined) => (value === undefined ? [] : [value].flat());

/** How API Gateway reads an authorizer's policy for one method ARN: any Deny wins, else some Allow is needed. */
export function policyVerdict(answer: AuthorizerAnswer, methodArn: string): 'allow' | 'deny' | 'none' {
  let verdict: 'allow' | 'deny' | 'none' = 'none';
  for (const statement of answer.policyDocument?.Statement ?? []) {
    const actionMatches = list(statement.Action).some((action) =>
      pattern(action.toLowerCase()).test('execute-api:invoke'),
    );
    const resourceMatches = list(statement.Resource).some((resource) => pattern(resource).test(methodArn));
    if (!actionMatches || !resourceMatches) continue;
    if (statement.Effect === 'Deny') return 'deny';
    if (statement.Effect === 'Allow') verdict = 'allow';
  }
  return verdict;
}

function malformed(answer: unknown): string | undefined {
  const candidate = answer as AuthorizerAnswer | null;
  if (!candidate || typeof candidate !== 'object') return 'it answered no object';
  if (typeof candidate.principalId !== 'string') return 'its answer has no principalId string';
  if (!Array.isArray(candidate.policyDocument?.Statement))
    return 'its answer has no policyDocument with a Statement list';
  const context = candidate.context ?? {};
  const bad = Object.entries(context).filter(
    ([, value]) => !['string', 'number', 'boolean'].includes(typeof value),
  );
  if (bad.length > 0)
    return `its context holds ${bad.map(([key]) => key).join(', ')}, which are not strings, numbers or booleans`;
  return undefined;
}

/**
 * API Gateway's Lambda authorizers for the rehearsal: identity sources checked first (401
 * without asking the function), the function invoked if API Gateway may invoke it (its
 * AWS::Lambda::Permission), its policy read against the method ARN, answers cached for the
 * authorizer's TTL by identity source values.
 */
export class ApiAuthorizers {
  readonly #cache = new Map<string, { answer: AuthorizerAnswer; until: number }>();
  readonly #deps: {
    api: ApiModel;
    lambda: LambdaService;
    iam: IamCheck;
    ledger: RehearsalLedger;
    executeApiArn: string;
  };

  constructor(deps: {
    api: ApiModel;
    lambda: LambdaService;
    iam: IamCheck;
    ledger: RehearsalLedger;
    executeApiArn: string;
  }) {
    this.#deps = deps;
  }

  async authorize(
    authorizer: AuthorizerModel,
    routed: RoutedRequest,
    methodArn: string,
    context: APIGatewayProxyEvent['requestContext'],
  ): Promise<AuthorizerOutcome> {
    const identity: string[] = [];
    for (const source of authorizer.identitySources) {
      const header = /^method\.request\.header\.(.+)$/.exec(source)?.[1];
      const query = /^method\.request\.querystring\.(.+)$/.exec(source)?.[1];
      const value = header
        ? headerValue(routed.headers, header)
        : query
          ? (routed.url.searchParams.get(query) ?? undefined)
          : source;
      if (!value) return { allowed: false, type: 'UNAUTHORIZED', message: 'Unauthorized' };
      identity.push(value);
    }
    const key = JSON.stringify([authorizer.id, identity]);
    const cached = this.#cache.get(key);
    let answer: AuthorizerAnswer;
    if (cached && cached.until > Date.now()) answer = cached.answer;
    else {
      const invoked = await this.#invoke(authorizer, routed, methodArn, context, identity[0]);
      if ('type' in invoked) return invoked;
      answer = invoked.answer;
      if (authorizer.ttlSeconds > 0)
        this.#cache.set(key, { answer, until: Date.now() + authorizer.ttlSeconds * 1000 });
    }
    const verdict = policyVerdict(answer, methodArn);
    if (verdict === 'deny')
      return {
        allowed: false,
        type: 'ACCESS_DENIED',
        message: 'User is not authorized to access this resource with an explicit deny',
      };
    if (verdict === 'none')
      return {
        allowed: false,
        type: 'ACCESS_DENIED',
        message: 'User is not authorized to access this resource',
      };
    const handedOn = Object.fromEntries(Object.entries(answer.context ?? {}).map(([k, v]) => [k, String(v)]));
    return { allowed: true, context: { ...handedOn, principalId: answer.principalId } };
  }

  async #invoke(
    authorizer: AuthorizerModel,
    routed: RoutedRequest,
    methodArn: string,
    context: APIGatewayProxyEvent['requestContext'],
    token: string | undefined,
  ): Promise<{ answer: AuthorizerAnswer } | { allowed: false; type: string; message: string }> {
    const { lambda, iam, ledger, executeApiArn } = this.#deps;
    const decision = await iam.authorize(
      {
        kind: 'service',
        service: 'apigateway.amazonaws.com',
        sourceArn: `${executeApiArn}/authorizers/${authorizer.id}`,
        label: 'API Gateway',
      },
      { action: 'lambda:InvokeFunction', resource: authorizer.fn.arn },
    );
    if (!decision.allowed)
      return { allowed: false, type: 'AUTHORIZER_CONFIGURATION_ERROR', message: 'Internal server error' };
    const event =
      authorizer.type === 'TOKEN'
        ? { type: 'TOKEN', authorizationToken: token, methodArn }
        : requestAuthorizerEvent(routed, methodArn, context);
    try {
      const answer = await lambda.invoke(authorizer.fn, event);
      const problem = malformed(answer);
      if (!problem) return { answer: answer as AuthorizerAnswer };
      ledger.problem(
        new RehearsalProblem(
          'api',
          `authorizer ${authorizer.fn.displayName}: ${problem}; API Gateway answers AUTHORIZER_CONFIGURATION_ERROR`,
        ),
      );
      return { allowed: false, type: 'AUTHORIZER_CONFIGURATION_ERROR', message: 'Internal server error' };
    } catch (error) {
      if (!(error instanceof LambdaInvocationError)) throw error;
      if (error.errorMessage === 'Unauthorized')
        return { allowed: false, type: 'UNAUTHORIZED', message: 'Unauthorized' };
      const unanswered = error.errorType === 'Sandbox.Timedout' || error.errorType.startsWith('Runtime.');
      return {
        allowed: false,
        type: unanswered ? 'AUTHORIZER_FAILURE' : 'AUTHORIZER_CONFIGURATION_ERROR',
        message: 'Internal server error',
      };
    }
  }
}
