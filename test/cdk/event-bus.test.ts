import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { eventsNeedingAttention } from '../../lib/server/core/events/events.ts';
import { fixtureSpecs } from './fixtures/manifest.ts';
import { allowed, fixtureStack, logicalId, problemsOf } from './support.ts';

describe("the stack's event bus", () => {
  const { stack, template } = fixtureStack();
  const bus = logicalId(stack, stack.events.bus);
  const roleOf = (name: string) => logicalId(stack, stack.functions.roles.get(name) as never);

  it('lets only the functions that list events:put put events, on the bus alone, and tells them its name', () => {
    const busArn = JSON.stringify({ 'Fn::GetAtt': [bus, 'Arn'] });
    const putters = fixtureSpecs
      .filter((spec) => spec.access.includes('events:put'))
      .map((spec) => spec.name);
    expect(putters.length).toBeGreaterThan(0);
    for (const spec of fixtureSpecs) {
      const puts = allowed(template, roleOf(spec.name)).get('events:PutEvents');
      const environment =
        template.toJSON().Resources[logicalId(stack, stack.functions.get(spec.name))].Properties.Environment
          .Variables;
      if (putters.includes(spec.name)) {
        expect(puts, spec.name).toEqual([busArn]);
        expect(environment.MESH_EVENT_BUS_NAME, spec.name).toEqual({ Ref: bus });
      } else {
        expect(puts, spec.name).toBeUndefined();
        expect(environment.MESH_EVENT_BUS_NAME, spec.name).toBeUndefined();
      }
    }
  });

  it('is named in an output, and has no rule until one is asked for', () => {
    template.hasOutput('EventBusName', { Value: { Ref: bus } });
    template.resourceCountIs('AWS::Events::Rule', 0);
  });

  it('mails the events a person has to act on when -c eventsEmail is given, through a topic of its own', () => {
    const { stack: mailing, template: mailed } = fixtureStack({ eventsEmail: 'oncall@example.com' });
    const topic = logicalId(mailing, mailing.events.emailTopic as never);
    mailed.hasResourceProperties('AWS::Events::Rule', {
      EventBusName: { Ref: logicalId(mailing, mailing.events.bus) },
      EventPattern: { source: ['mesh'], 'detail-type': [...eventsNeedingAttention] },
      Targets: [Match.objectLike({ Arn: { Ref: topic } })],
    });
    mailed.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
      TopicArn: { Ref: topic },
    });
    // EventBridge may publish to the topic, over TLS only
    mailed.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Principal: { Service: 'events.amazonaws.com' }, Action: 'sns:Publish' }),
        ]),
      },
    });
    expect(eventsNeedingAttention).toContain('rollout.halted');
  });

  it('refuses an eventsEmail that is not an address', () => {
    expect(problemsOf(() => fixtureStack({ eventsEmail: 'oncall' }))).toEqual([
      'eventsEmail "oncall" is not an email address',
    ]);
  });
});
