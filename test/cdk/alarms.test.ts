import { beforeAll, describe, expect, it } from 'vitest';
import { type CfnResource, type CfnTemplate, readAssembly } from '../../tools/rehearsal/assembly.ts';
import { cachedSynth } from '../../tools/rehearsal/synth.ts';
import { fixtureStack, problemsOf } from './support.ts';

/**
 * The real app as `npm run synth` builds it (the synthesis shared with app.test.ts), its nested
 * stacks read as one template: who is told, about what, and what a new account accepts.
 */
let template: CfnTemplate;
beforeAll(async () => {
  template = readAssembly((await cachedSynth({ bundles: false })).cdkOut).template;
}, 300_000);

const ofType = (type: string) =>
  Object.entries(template.Resources).filter(([, resource]) => resource.Type === type);
const alarms = () => ofType('AWS::CloudWatch::Alarm') as Array<[string, CfnResource]>;
const alarmNamed = (pattern: RegExp) => alarms().filter(([id]) => pattern.test(id));
const props = (resource: CfnResource) => resource.Properties as Record<string, unknown>;
/** Every metric an alarm reads, alone or inside its math: `Namespace MetricName`. */
const metricsOf = (resource: CfnResource) => {
  const p = props(resource);
  const single = p.MetricName ? [`${p.Namespace} ${p.MetricName}`] : [];
  const inMath = (
    (p.Metrics ?? []) as Array<{ MetricStat?: { Metric: { Namespace: string; MetricName: string } } }>
  ).flatMap((metric) =>
    metric.MetricStat ? [`${metric.MetricStat.Metric.Namespace} ${metric.MetricStat.Metric.MetricName}`] : [],
  );
  return [...single, ...inMath];
};

describe('the alarms of the real app', () => {
  it('each notify the alarm topic, on alarm and back to OK', () => {
    const [topicId] = ofType('AWS::SNS::Topic')[0] as [string, CfnResource];
    expect(alarms().length).toBeGreaterThan(60);
    for (const [id, alarm] of alarms()) {
      expect(props(alarm).AlarmActions, id).toEqual([{ Ref: topicId }]);
      expect(props(alarm).OKActions, id).toEqual([{ Ref: topicId }]);
    }
  });

  it('watch failed and timed-out executions of every state machine', () => {
    const machines = ofType('AWS::StepFunctions::StateMachine');
    expect(machines).toHaveLength(3);
    for (const metric of ['ExecutionsFailed', 'ExecutionsTimedOut']) {
      const watching = alarms().filter(([, alarm]) => metricsOf(alarm).includes(`AWS/States ${metric}`));
      // a stepping flow's alarm sums failed and aborted in a math expression: its metrics name the machine
      const watched = watching.map(([, alarm]) => JSON.stringify(alarm));
      for (const [machineId] of machines) expect(watched.join(' '), metric).toContain(`"${machineId}"`);
    }
  });

  it("watch the API's 5XX answers and every table's throttled reads and writes", () => {
    expect(alarms().filter(([, alarm]) => metricsOf(alarm).includes('AWS/ApiGateway 5XXError'))).toHaveLength(
      1,
    );
    const tables = ofType('AWS::DynamoDB::GlobalTable').map(([id]) => id);
    const throttles = alarms().filter(([, alarm]) =>
      ['ReadThrottleEvents', 'WriteThrottleEvents'].every((name) =>
        metricsOf(alarm).includes(`AWS/DynamoDB ${name}`),
      ),
    );
    expect(
      throttles.map(([, alarm]) => tables.find((id) => JSON.stringify(alarm).includes(`"${id}"`))).sort(),
    ).toEqual([...tables].sort());
  });

  it('watch a rollout or apply job that has not moved: its step failing three 5-minute periods in a row', () => {
    for (const flow of [/^AlarmsRolloutFlowNotMoving/, /^AlarmsApplyFlowNotMoving/]) {
      const [found] = alarmNamed(flow);
      expect(found, String(flow)).toBeDefined();
      const p = props((found as [string, CfnResource])[1]);
      expect([p.MetricName, p.Period, p.EvaluationPeriods, p.DatapointsToAlarm]).toEqual([
        'Errors',
        300,
        3,
        3,
      ]);
    }
  });

  it('do not fire on one stray error: functions, the push flow and the API need a repeat', () => {
    const thresholdOf = (pattern: RegExp) =>
      alarmNamed(pattern).map(([, alarm]) => [props(alarm).Threshold, props(alarm).ComparisonOperator]);
    expect(new Set(thresholdOf(/Failures[A-F0-9]{8}$/).map(String))).toEqual(
      new Set(['3,GreaterThanOrEqualToThreshold']),
    );
    expect(thresholdOf(/^AlarmsPushFlowExecutionsFailed/)).toEqual([[3, 'GreaterThanOrEqualToThreshold']]);
    expect(thresholdOf(/^AlarmsApi5xx/)).toEqual([[5, 'GreaterThanOrEqualToThreshold']]);
  });

  it('have a dashboard beside them showing pushes, reports, holds and losses, rollouts, throttles and errors', () => {
    const [, dashboard] = ofType('AWS::CloudWatch::Dashboard')[0] as [string, CfnResource];
    const body = JSON.stringify(props(dashboard).DashboardBody);
    for (const title of ['Pushes', "Hosts' reports", 'Holds and losses', 'Rollouts', 'Throttles', 'Errors'])
      expect(body).toContain(title);
  });
});

describe('what a new account accepts, and what removing the stack leaves', () => {
  it('reserves no Lambda concurrency, which a new account may not have to give', () => {
    const reserving = ofType('AWS::Lambda::Function').filter(
      ([, fn]) => props(fn).ReservedConcurrentExecutions !== undefined,
    );
    expect(reserving.map(([id]) => id)).toEqual([]);
  });

  it("keeps the account's API Gateway logging role and its setting when the stack is deleted", () => {
    const [, account] = ofType('AWS::ApiGateway::Account')[0] as [string, CfnResource];
    const roleId = (props(account).CloudWatchRoleArn as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const role = template.Resources[roleId] as CfnResource & { DeletionPolicy?: string };
    expect(role.Type).toBe('AWS::IAM::Role');
    expect(role.DeletionPolicy).toBe('Retain');
    expect((account as { DeletionPolicy?: string }).DeletionPolicy).toBe('Retain');
  });
});

describe('the alarm address', () => {
  it('is subscribed to the alarm topic by email when given', () => {
    const { template: withEmail } = fixtureStack({ alarmEmail: 'oncall@example.com' });
    withEmail.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'oncall@example.com',
    });
  });

  it('is refused when it is not an address', () => {
    expect(problemsOf(() => fixtureStack({ alarmEmail: 'oncall' }))).toEqual([
      'alarmEmail "oncall" is not an email address',
    ]);
  });
});
