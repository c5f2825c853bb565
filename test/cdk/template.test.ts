import { beforeAll, describe, expect, it } from 'vitest';
import type { RecordedCall } from '../../lib/local/call-record.ts';
import { type Assembly, type CfnTemplate, readAssembly } from '../../tools/rehearsal/assembly.ts';
import { judgeCalls } from '../../tools/rehearsal/call-judge.ts';
import { stackOf } from '../../tools/rehearsal/stack.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';
import { checkTemplate } from '../../tools/rehearsal/template-checks.ts';

/**
 * The synthesized app (the run's one synthesis of the template, without bundles:
 * tools/rehearsal/synth.ts; the bundles are test/package/function-bundles.test.ts's) held to the code
 * by the rehearsal's checks (docs/rehearsal.md); each check also shown failing on a copy of the
 * template changed in memory, naming the function, the action or setting, and the resource.
 */
let assembly: Assembly;

beforeAll(async () => {
  assembly = readAssembly((await cachedSynth({ bundles: false })).cdkOut);
}, 300_000);

/** The stack with its template changed by `change` (on a copy). */
const changed = (change: (template: CfnTemplate) => void) => {
  const template = structuredClone(assembly.template);
  change(template);
  return stackOf({ ...assembly, template });
};
const resource = (template: CfnTemplate, type: string, path: RegExp) =>
  Object.values(template.Resources).find(
    (candidate) => candidate.Type === type && path.test(String(candidate.Metadata?.['aws:cdk:path'])),
  )?.Properties as Record<string, unknown>;

const heldReport: RecordedCall = {
  fn: 'control-consumer',
  target: 'AmazonSQS.ChangeMessageVisibility',
  body: JSON.stringify({
    QueueUrl: 'http://127.0.0.1:4566/000000000000/bed-control.fifo',
    ReceiptHandle: 'handle',
    VisibilityTimeout: 10,
  }),
};

describe('the synthesized template', () => {
  it('agrees with lib/server/functions/table.ts, the push and rollout flows’ ASL and what the consumer relies on', async () => {
    expect(await checkTemplate(stackOf(assembly))).toEqual([]);
  });

  it('lets the consumer hold a report (ChangeMessageVisibility on the control queue)', async () => {
    expect((await judgeCalls(stackOf(assembly), [heldReport])).findings).toEqual([]);
  });
});

describe('the rehearsal’s checks fail, naming what differs', () => {
  it('a call the function’s role does not allow: the consumer without ChangeMessageVisibility', async () => {
    const stack = changed((template) => {
      const policy = resource(template, 'AWS::IAM::Policy', /ControlConsumerRole\/DefaultPolicy/);
      const document = policy.PolicyDocument as { Statement: Array<{ Action: string | string[] }> };
      for (const statement of document.Statement)
        statement.Action = [statement.Action]
          .flat()
          .filter((action) => action !== 'sqs:ChangeMessageVisibility');
    });

    expect((await judgeCalls(stack, [heldReport])).findings).toEqual([
      expect.stringMatching(
        /^denied: Functions\/ControlConsumer called sqs:ChangeMessageVisibility on arn:aws:sqs:[\w-]+:\d+:Mesh-ControlQueueControl\w+\.fifo: no statement of the policies of role Functions\/ControlConsumerRole .*allows it$/,
      ),
    ]);
  });

  it('a route whose authorization is not its row’s, a method no row serves', async () => {
    const stack = changed((template) => {
      const method = resource(template, 'AWS::ApiGateway::Method', /\/hosts\/\{node\}\/reports\/POST\//);
      method.AuthorizationType = 'NONE';
      resource(template, 'AWS::ApiGateway::Method', /\/health\/GET\//).HttpMethod = 'PUT';
    });

    expect(await checkTemplate(stack)).toEqual(
      expect.arrayContaining([
        'POST /hosts/{node}/reports (host-report): authorization NONE, where a host route needs CUSTOM',
        'GET /health (health): the template has no such method',
        'PUT /health: a method of the template no row of lib/server/functions/table.ts serves',
      ]),
    );
  });

  it('a push flow whose substitutions swap two tasks, a mapping without partial batch responses', async () => {
    const stack = changed((template) => {
      const machine = resource(template, 'AWS::StepFunctions::StateMachine', /PushFlow/);
      const substitutions = machine.DefinitionSubstitutions as Record<string, unknown>;
      [substitutions.PushBeginFunctionArn, substitutions.PushSendFunctionArn] = [
        substitutions.PushSendFunctionArn,
        substitutions.PushBeginFunctionArn,
      ];
      resource(template, 'AWS::Lambda::EventSourceMapping', /ControlConsumer/).FunctionResponseTypes = [];
    });

    expect(await checkTemplate(stack)).toEqual(
      expect.arrayContaining([
        'PushFlow/StateMachine: ${PushBeginFunctionArn} is push-send, not push-begin',
        'ControlConsumer/Mapping: without ReportBatchItemFailures a held or failed message would be deleted with its batch',
      ]),
    );
  });

  it('a rollout flow of another definition, type or function, and a role that may not invoke its step', async () => {
    const stack = changed((template) => {
      const machine = resource(template, 'AWS::StepFunctions::StateMachine', /RolloutFlow/);
      machine.StateMachineType = 'EXPRESS';
      machine.DefinitionString = '{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}';
      delete machine.DefinitionS3Location;
      delete machine.Definition;
      const substitutions = machine.DefinitionSubstitutions as Record<string, unknown>;
      substitutions.Extra = substitutions.RolloutAdvanceFunctionArn;
      const policy = resource(template, 'AWS::IAM::Policy', /RolloutFlow\/StateMachine\/Role\/DefaultPolicy/);
      const document = policy.PolicyDocument as { Statement: Array<{ Action: string | string[] }> };
      for (const statement of document.Statement)
        statement.Action = [statement.Action].flat().filter((action) => action !== 'lambda:InvokeFunction');
    });

    expect(await checkTemplate(stack)).toEqual(
      expect.arrayContaining([
        'RolloutFlow/StateMachine: EXPRESS, where a rollout that waits on hosts needs STANDARD',
        'RolloutFlow/StateMachine: its definition is not lib/server/flows/rollout.asl.json',
        'RolloutFlow/StateMachine: ${Extra} fills no task',
        expect.stringMatching(/RolloutFlow\/StateMachine.*lambda:InvokeFunction.*RolloutAdvance/),
      ]),
    );
  });

  it('a rollout flow whose step is filled with another function', async () => {
    const stack = changed((template) => {
      const machine = resource(template, 'AWS::StepFunctions::StateMachine', /RolloutFlow/);
      const substitutions = machine.DefinitionSubstitutions as Record<string, unknown>;
      const push = resource(template, 'AWS::StepFunctions::StateMachine', /PushFlow/);
      substitutions.RolloutAdvanceFunctionArn = (
        push.DefinitionSubstitutions as Record<string, unknown>
      ).PushSendFunctionArn;
    });

    expect(await checkTemplate(stack)).toEqual(
      expect.arrayContaining([
        'RolloutFlow/StateMachine: ${RolloutAdvanceFunctionArn} is push-send, not rollout-advance',
      ]),
    );
  });

  it('an apply flow of another type or definition, or whose step is filled with another function', async () => {
    const stack = changed((template) => {
      const machine = resource(template, 'AWS::StepFunctions::StateMachine', /ApplyFlow/);
      machine.StateMachineType = 'EXPRESS';
      machine.DefinitionString = '{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}';
      delete machine.DefinitionS3Location;
      delete machine.Definition;
      const substitutions = machine.DefinitionSubstitutions as Record<string, unknown>;
      const rollout = resource(template, 'AWS::StepFunctions::StateMachine', /RolloutFlow/);
      substitutions.MeshApplyAdvanceFunctionArn = (
        rollout.DefinitionSubstitutions as Record<string, unknown>
      ).RolloutAdvanceFunctionArn;
    });

    expect(await checkTemplate(stack)).toEqual(
      expect.arrayContaining([
        'ApplyFlow/StateMachine: EXPRESS, where an apply job whose parts outlast five minutes needs STANDARD',
        'ApplyFlow/StateMachine: its definition is not lib/server/flows/apply.asl.json',
        'ApplyFlow/StateMachine: ${MeshApplyAdvanceFunctionArn} is rollout-advance, not mesh-apply-advance',
      ]),
    );
  });

  it('a broker decision IAM’s evaluator does not share, for the policies the authorizer answered', async () => {
    const own = 'arn:aws:iot:us-east-1:000000000000:topicfilter/mesh/nodes/app/signal';
    const policies = [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'iot:Subscribe', Resource: own }] },
    ];
    const wildcard = 'arn:aws:iot:us-east-1:000000000000:topicfilter/mesh/#';

    const verdict = await judgeCalls(stackOf(assembly), [
      { broker: 'iot:Subscribe', resource: own, allowed: true, policies },
      { broker: 'iot:Subscribe', resource: wildcard, allowed: true, policies },
    ]);

    expect(verdict.findings).toEqual([
      `the embedded broker allowed iot:Subscribe on ${wildcard}, but IAM's evaluator denies it under the 1 policies Functions/SignalAuthorizer answered`,
    ]);
  });
});
