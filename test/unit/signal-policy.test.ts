import { describe, expect, it } from 'vitest';
import {
  type IotPolicyDocument,
  iotArn,
  nodePolicy,
  policyAllows,
} from '../../lib/server/core/signal/policy.ts';

const scope = { partition: 'aws', region: 'us-east-1', accountId: '000000000000' };
const arn = (kind: 'client' | 'topic' | 'topicfilter', name: string) => iotArn(scope, kind, name);

describe('nodePolicy', () => {
  const web1 = [nodePolicy(scope, 'web1')];

  it('allows connecting as the node itself only', () => {
    expect(policyAllows(web1, 'iot:Connect', arn('client', 'web1'))).toBe(true);
    expect(policyAllows(web1, 'iot:Connect', arn('client', 'web10'))).toBe(false);
    expect(policyAllows(web1, 'iot:Connect', arn('client', 'web'))).toBe(false);
  });

  it("allows subscribing to and receiving the node's own topics, and no other node's", () => {
    expect(policyAllows(web1, 'iot:Subscribe', arn('topicfilter', 'mesh/nodes/web1/signal'))).toBe(true);
    expect(policyAllows(web1, 'iot:Subscribe', arn('topicfilter', 'mesh/nodes/web1/#'))).toBe(true);
    expect(policyAllows(web1, 'iot:Receive', arn('topic', 'mesh/nodes/web1/signal'))).toBe(true);
    for (const filter of [
      'mesh/nodes/web10/signal',
      'mesh/nodes/+/signal',
      'mesh/nodes/#',
      '#',
      'mesh/nodes/web1',
    ]) {
      expect(policyAllows(web1, 'iot:Subscribe', arn('topicfilter', filter)), filter).toBe(false);
    }
    expect(policyAllows(web1, 'iot:Receive', arn('topic', 'mesh/nodes/web10/signal'))).toBe(false);
  });

  it('allows publishing nowhere, its own signal topic included', () => {
    for (const topic of ['mesh/nodes/web1/signal', 'mesh/nodes/web2/signal', 'anything']) {
      expect(policyAllows(web1, 'iot:Publish', arn('topic', topic)), topic).toBe(false);
    }
  });

  it('names one account and region: the same names elsewhere are not allowed', () => {
    const elsewhere = iotArn({ ...scope, accountId: '111111111111' }, 'client', 'web1');
    expect(policyAllows(web1, 'iot:Connect', elsewhere)).toBe(false);
  });
});

describe('policyAllows', () => {
  const documents: IotPolicyDocument[] = [
    {
      Version: '2012-10-17',
      Statement: [
        { Effect: 'Allow', Action: 'iot:*', Resource: [arn('topic', 'a/?'), arn('topic', 'b/*')] },
        { Effect: 'Deny', Action: ['iot:Publish'], Resource: arn('topic', 'b/secret') },
      ],
    },
  ];

  it('reads * as any characters and ? as exactly one, in actions and resources alike', () => {
    expect(policyAllows(documents, 'iot:Receive', arn('topic', 'a/1'))).toBe(true);
    expect(policyAllows(documents, 'iot:Receive', arn('topic', 'a/12'))).toBe(false);
    expect(policyAllows(documents, 'iot:Receive', arn('topic', 'b/x/y'))).toBe(true);
  });

  it('lets a matching Deny win over any Allow, and allows nothing without a matching Allow', () => {
    expect(policyAllows(documents, 'iot:Publish', arn('topic', 'b/secret'))).toBe(false);
    expect(policyAllows(documents, 'iot:Receive', arn('topic', 'b/secret'))).toBe(true);
    expect(policyAllows([], 'iot:Connect', arn('client', 'x'))).toBe(false);
  });

  it('treats regular-expression characters in a resource as themselves', () => {
    const dotted: IotPolicyDocument[] = [
      {
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 'iot:Receive', Resource: arn('topic', 'a.b') }],
      },
    ];
    expect(policyAllows(dotted, 'iot:Receive', arn('topic', 'a.b'))).toBe(true);
    expect(policyAllows(dotted, 'iot:Receive', arn('topic', 'axb'))).toBe(false);
  });
});
