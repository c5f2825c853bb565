import { describe, expect, it } from 'vitest';
import { LocalPushFlow } from '../../lib/adapters/stepfunctions/local-push-flow.ts';
import { StepFunctionsPushFlow } from '../../lib/adapters/stepfunctions/step-functions-push-flow.ts';
import { checkConfig } from '../../lib/config.ts';
import { RecordedPushFlow } from '../../lib/core/mesh/push-records.ts';
import { partsFor } from '../../lib/wiring.ts';
import { RecordingLog } from '../support/control-fakes.ts';

const config = checkConfig({
  region: 'eu-west-1',
  inventoryTable: 'mesh-inventory',
  identityTable: 'mesh-identity',
  controlQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/control.fifo',
  deadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dead.fifo',
  holdBoundSeconds: 30,
});

describe('partsFor', () => {
  it('builds each part on first use and keeps it', () => {
    const parts = partsFor(config);

    expect(parts.meshService).toBe(parts.meshService);
    expect(parts.credentials).toBe(parts.credentials);
    expect(parts.consumer.reports).toBe(parts.reports);
  });

  it('pushes in-process from the ASL without a state machine, on Step Functions with one, each recorded', () => {
    const local = partsFor(config).pushFlow;
    const deployed = partsFor({
      ...config,
      pushFlowArn: 'arn:aws:states:eu-west-1:123456789012:stateMachine:push',
    }).pushFlow;

    expect(local).toBeInstanceOf(RecordedPushFlow);
    expect(deployed).toBeInstanceOf(RecordedPushFlow);
    expect((local as RecordedPushFlow).flow).toBeInstanceOf(LocalPushFlow);
    expect((deployed as RecordedPushFlow).flow).toBeInstanceOf(StepFunctionsPushFlow);
  });

  it('reads the hold bound from the configuration, and puts a replaced part everywhere it is used', () => {
    const log = new RecordingLog();
    const parts = partsFor(config, { overrides: { log } });

    expect(parts.consumer.holdPolicy.boundSeconds).toBe(30);
    expect(parts.consumer.log).toBe(log);
  });
});
