import { describe, expect, it } from 'vitest';
import type { CfnTemplate } from '../../../tools/rehearsal/assembly.ts';
import { IamCheck, type Principal } from '../../../tools/rehearsal/iam-check.ts';
import { TemplatePolicies } from '../../../tools/rehearsal/iam-policies.ts';
import { fixtureReferences, fixtureTemplate } from './fixture.ts';

const tableArn = 'arn:aws:dynamodb:eu-west-1:000000000000:table/Mesh-Table';
const queueArn = 'arn:aws:sqs:eu-west-1:000000000000:Mesh-Queue.fifo';
const fn: Principal = { kind: 'role', roleLogicalId: 'Role', session: 'Mesh-Fn', label: 'Functions/Fn' };

function check(template: CfnTemplate = fixtureTemplate) {
  const references = fixtureReferences(template);
  return { iam: new IamCheck(new TemplatePolicies(references), references) };
}

describe('IamCheck', () => {
  it('allows what the role’s policies grant, on the table and its indexes', async () => {
    const { iam } = check();

    expect(await iam.authorize(fn, { action: 'dynamodb:Query', resource: `${tableArn}/index/gsi1` })).toEqual(
      { allowed: true },
    );
  });

  it('judges the partition keys a write touches against dynamodb:LeadingKeys', async () => {
    const { iam } = check();
    const put = (key: string) =>
      iam.authorize(fn, {
        action: 'dynamodb:PutItem',
        resource: tableArn,
        context: { 'dynamodb:LeadingKeys': [key] },
      });

    expect(await put('proof#abc')).toEqual({ allowed: true });
    expect(await put('node#abc')).toEqual({
      allowed: false,
      reason: 'no statement of the policies of role Role allows it',
    });
  });

  it('denies what no statement grants, and holds the queue’s own policy', async () => {
    const { iam } = check();

    expect(await iam.authorize(fn, { action: 'sqs:SendMessage', resource: queueArn })).toEqual({
      allowed: true,
    });
    expect(await iam.authorize(fn, { action: 'sqs:DeleteMessage', resource: queueArn })).toMatchObject({
      allowed: false,
    });
    expect(
      await iam.authorize(fn, {
        action: 'sqs:SendMessage',
        resource: queueArn,
        context: { 'aws:SecureTransport': 'false' },
      }),
    ).toMatchObject({ allowed: false, reason: expect.stringMatching(/explicitly denied/) });
  });

  it('reads a role’s trust policy for the service that assumes it', async () => {
    const { iam } = check();
    const assume = (service: string) =>
      iam.authorize(
        {
          kind: 'service',
          service,
          sourceArn: 'arn:aws:lambda:eu-west-1:000000000000:function:Mesh-Fn',
          label: service,
        },
        { action: 'sts:AssumeRole', resource: 'arn:aws:iam::000000000000:role/Mesh-Role' },
      );

    expect(await assume('lambda.amazonaws.com')).toEqual({ allowed: true });
    expect(await assume('states.amazonaws.com')).toMatchObject({ allowed: false });
  });

  it('names every condition key a policy tests that the rehearsal does not set', () => {
    const template = structuredClone(fixtureTemplate) as CfnTemplate;
    const policy = template.Resources.RolePolicy?.Properties?.PolicyDocument as {
      Statement: Array<Record<string, unknown>>;
    };
    policy.Statement.push({
      Effect: 'Allow',
      Action: 'dynamodb:GetItem',
      Resource: '*',
      Condition: { 'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['pk'] } },
    });

    expect(check(template).iam.unsupportedConditionKeys()).toEqual([
      'policy RolePolicy (Role) tests the condition key dynamodb:attributes, which the rehearsal does not set on requests',
    ]);
  });
});
