import { Stack, Validations } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { ApiFirewall } from '../../lib/deploy/api-firewall.ts';
import { MeshStack } from '../../lib/deploy/mesh-stack.ts';
import { AwsSolutionsChecks } from '../../lib/deploy/nag.ts';
import type { FunctionSpec } from '../../lib/server/functions/table.ts';
import { fixtureAslPath, fixtureFunctionsDir, fixtureSpecs, unused } from './fixtures/manifest.ts';
import { fixtureStack, logicalId, problemsOf, unbundledApp } from './support.ts';

/** The fixture manifest and an open health route: one route of every kind of caller. */
const specs: readonly FunctionSpec[] = [
  ...fixtureSpecs,
  {
    name: 'open-read',
    purpose: 'an open route',
    access: [],
    trigger: 'api',
    route: { method: 'GET', path: '/health', auth: 'none' },
    handler: unused,
  },
];

type MethodSetting = {
  HttpMethod: string;
  ResourcePath: string;
  ThrottlingRateLimit?: number;
  ThrottlingBurstLimit?: number;
};

describe('ControlPlaneApi budgets', () => {
  const { template } = fixtureStack({ specs });
  const [stage] = Object.values(template.findResources('AWS::ApiGateway::Stage'));
  const settings = (stage?.Properties.MethodSettings ?? []) as MethodSetting[];
  const budgetOf = (method: string, path: string) => {
    const setting = settings.find((s) => s.HttpMethod === method && s.ResourcePath === path);
    return setting && { rate: setting.ThrottlingRateLimit, burst: setting.ThrottlingBurstLimit };
  };

  it('gives every method the budget of its kind of caller: operators, hosts, tokens, open', () => {
    expect({
      operator: budgetOf('GET', '/~1nodes~1{node}'),
      host: budgetOf('GET', '/~1hosts~1{node}~1declaration'),
      token: budgetOf('POST', '/~1enrol'),
      none: budgetOf('GET', '/~1health'),
    }).toEqual({
      operator: { rate: 20, burst: 40 },
      host: { rate: 100, burst: 200 },
      token: { rate: 5, burst: 10 },
      none: { rate: 5, burst: 10 },
    });
  });

  it('keeps no throttle on the stage as a whole, so no caller spends another kind’s budget', () => {
    const stageWide = settings.find((s) => s.HttpMethod === '*' && s.ResourcePath === '/*');
    expect(stageWide).toBeDefined();
    expect(stageWide?.ThrottlingRateLimit).toBeUndefined();
    expect(stageWide?.ThrottlingBurstLimit).toBeUndefined();
    expect(settings.filter((s) => s.ThrottlingRateLimit !== undefined)).toHaveLength(4);
  });

  it('takes each budget from its props, and reports every bad one together', () => {
    const scope = new Stack(unbundledApp(), 'Budgets');
    const { template: given } = fixtureStack({
      specs,
      budgets: { host: { rateLimit: 400, burstLimit: 800 } },
    });
    const [givenStage] = Object.values(given.findResources('AWS::ApiGateway::Stage'));
    expect(
      ((givenStage?.Properties.MethodSettings ?? []) as MethodSetting[]).find((s) =>
        s.ResourcePath.includes('hosts'),
      ),
    ).toMatchObject({ ThrottlingRateLimit: 400, ThrottlingBurstLimit: 800 });
    expect(
      problemsOf(
        () =>
          new MeshStack(scope, 'Bad', {
            specs,
            functionsDir: fixtureFunctionsDir,
            pushFlowAslPath: fixtureAslPath,
            budgets: { operator: { rateLimit: 0, burstLimit: 1 }, token: { rateLimit: 1, burstLimit: 0.5 } },
          }),
      ),
    ).toEqual([
      'budgets.operator needs a positive rateLimit and a whole burstLimit of at least 1',
      'budgets.token needs a positive rateLimit and a whole burstLimit of at least 1',
    ]);
  });
});

describe('the host authorizer cache', () => {
  it('caches answers by the proof for as long as a proof is accepted (60 s): each proof is single-use', () => {
    const { template } = fixtureStack();
    template.hasResourceProperties('AWS::ApiGateway::Authorizer', {
      Type: 'REQUEST',
      IdentitySource: 'method.request.header.Authorization',
      AuthorizerResultTtlInSeconds: 60,
    });
  });
});

describe('ApiFirewall', () => {
  const { stack, template } = fixtureStack({ specs });

  it('guards the API stage with a regional web ACL by default', () => {
    template.resourceCountIs('AWS::WAFv2::WebACL', 1);
    template.hasResourceProperties('AWS::WAFv2::WebACL', {
      Scope: 'REGIONAL',
      DefaultAction: { Allow: {} },
    });
    const [association] = Object.values(template.findResources('AWS::WAFv2::WebACLAssociation'));
    const arn = JSON.stringify(association?.Properties.ResourceArn);
    expect(arn).toContain(logicalId(stack, stack.api.api));
    expect(arn).toContain(logicalId(stack, stack.api.api.deploymentStage));
  });

  it('limits each address on POST /enrol and on the whole API, answering 429 in the problem shape', () => {
    const blocked = {
      Block: {
        CustomResponse: {
          ResponseCode: 429,
          CustomResponseBodyKey: 'throttled',
          ResponseHeaders: [{ Name: 'Retry-After', Value: '60' }],
        },
      },
    };
    template.hasResourceProperties('AWS::WAFv2::WebACL', {
      CustomResponseBodies: {
        throttled: {
          ContentType: 'APPLICATION_JSON',
          Content: Match.stringLikeRegexp('^\\{"error":\\{"code":"THROTTLED","message":"[^"]+"\\}\\}$'),
        },
      },
      Rules: [
        Match.objectLike({
          Name: 'enrol-per-address',
          Priority: 0,
          Action: blocked,
          Statement: {
            RateBasedStatement: {
              Limit: 500,
              EvaluationWindowSec: 300,
              AggregateKeyType: 'IP',
              ScopeDownStatement: {
                RegexMatchStatement: Match.objectLike({
                  RegexString: '/enrol/?$',
                  FieldToMatch: { UriPath: {} },
                }),
              },
            },
          },
        }),
        Match.objectLike({
          Name: 'requests-per-address',
          Priority: 1,
          Action: blocked,
          Statement: {
            RateBasedStatement: { Limit: 10000, EvaluationWindowSec: 300, AggregateKeyType: 'IP' },
          },
        }),
      ],
    });
  });

  it('takes its limits from props, and refuses limits WAF does not take, together', () => {
    const { template: given } = fixtureStack({
      specs,
      firewall: { enrolPerAddress: 20, requestsPerAddress: 50_000 },
    });
    given.hasResourceProperties('AWS::WAFv2::WebACL', {
      Rules: [
        Match.objectLike({ Statement: { RateBasedStatement: Match.objectLike({ Limit: 20 }) } }),
        Match.objectLike({ Statement: { RateBasedStatement: Match.objectLike({ Limit: 50_000 }) } }),
      ],
    });
    const scope = new Stack(unbundledApp(), 'Limits');
    const stage = fixtureStack().stack.api.api.deploymentStage;
    expect(
      problemsOf(
        () => new ApiFirewall(scope, 'Firewall', { stage, enrolPerAddress: 5, requestsPerAddress: 10.5 }),
      ),
    ).toEqual([
      'enrolPerAddress must be a whole number from 10 to 2000000000 (requests per address in 5 minutes)',
      'requestsPerAddress must be a whole number from 10 to 2000000000 (requests per address in 5 minutes)',
    ]);
  });

  it('is left out when turned off', () => {
    const { template: off } = fixtureStack({ specs, firewall: false });
    off.resourceCountIs('AWS::WAFv2::WebACL', 0);
    off.resourceCountIs('AWS::WAFv2::WebACLAssociation', 0);
  });

  it('passes cdk-nag either way: on, the stage has its web ACL; off, the missing one is acknowledged', () => {
    // a finding fails the synthesis (ValidationFailed), as it fails `npm run synth`
    const synthesize = (firewall: boolean) => () => {
      const app = unbundledApp();
      new MeshStack(app, 'Mesh', {
        specs,
        functionsDir: fixtureFunctionsDir,
        pushFlowAslPath: fixtureAslPath,
        firewall,
      });
      Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
      app.synth();
    };
    expect(synthesize(true)).not.toThrow();
    expect(synthesize(false)).not.toThrow();
  });
});
