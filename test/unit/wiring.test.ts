import { describe, expect, it } from 'vitest';
import { LocalPushFlow } from '../../lib/local/local-push-flow.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { EventBridgeEventSink } from '../../lib/server/adapters/events/eventbridge-sink.ts';
import { WebhookEventSink } from '../../lib/server/adapters/events/webhook-sink.ts';
import { StepFunctionsPushFlow } from '../../lib/server/adapters/push/step-functions-push-flow.ts';
import {
  IotDataSignalPublisher,
  noBrokerPublisher,
} from '../../lib/server/adapters/signal/iot-data-publisher.ts';
import {
  AnnouncingApplyJobs,
  AnnouncingAuditReader,
  AnnouncingPresence,
  AnnouncingReports,
} from '../../lib/server/core/events/announcing.ts';
import { noEvents } from '../../lib/server/core/events/events.ts';
import { RecordedPushFlow } from '../../lib/server/core/push/records.ts';
import { checkConfig, configEnvironment, readConfig } from '../../lib/server/setup/config.ts';
import { partsFor } from '../../lib/server/wiring/parts.ts';
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
  it('refuses, when first asked, what AWS serves and nothing stands in for: the server never builds a local stand-in', () => {
    const parts = partsFor({
      ...config,
      signal: { brokerUrl: 'mqtt://127.0.0.1:4601', accountId: '1', partition: 'aws' },
    });

    expect(() => parts.pushFlow).toThrow(/no push flow: configure MESH_PUSH_FLOW_ARN/);
    expect(() => parts.pushStarter).toThrow(/no push-run function: configure MESH_PUSH_RUNNER_ARN/);
    expect(() => parts.applyFlow).toThrow(/no apply flow: configure MESH_APPLY_FLOW_ARN/);
    expect(() => parts.signalPublisher).toThrow(/no signal publisher: configure MESH_IOT_DATA_ENDPOINT/);
  });

  it('builds each part on first use and keeps it', () => {
    const parts = localPartsFor(config);

    expect(parts.meshService).toBe(parts.meshService);
    expect(parts.credentials).toBe(parts.credentials);
    expect(parts.consumer.reports).toBe(parts.reports);
  });

  it('pushes in-process from the ASL without a state machine (the local runtime stands in), on Step Functions with one, each recorded', () => {
    const local = localPartsFor(config).pushFlow;
    const deployed = partsFor({
      ...config,
      pushFlowArn: 'arn:aws:states:eu-west-1:123456789012:stateMachine:push',
    }).pushFlow;

    expect(local).toBeInstanceOf(RecordedPushFlow);
    expect(deployed).toBeInstanceOf(RecordedPushFlow);
    expect((local as RecordedPushFlow).flow).toBeInstanceOf(LocalPushFlow);
    expect((deployed as RecordedPushFlow).flow).toBeInstanceOf(StepFunctionsPushFlow);
  });

  it('publishes signals to IoT with a data endpoint, to the embedded broker without, and nowhere with no broker', () => {
    const signal = {
      brokerUrl: 'mqtts://a1-ats.iot.eu-west-1.amazonaws.com:443',
      accountId: '123456789012',
      partition: 'aws',
    };
    const onAws = partsFor({
      ...config,
      signal: { ...signal, iotDataEndpoint: 'a1-ats.iot.eu-west-1.amazonaws.com' },
    });
    const local = localPartsFor({ ...config, signal: { ...signal, brokerUrl: 'mqtt://127.0.0.1:4601' } });
    const none = partsFor(config);

    expect(onAws.signalPublisher).toBeInstanceOf(IotDataSignalPublisher);
    expect(local.signalPublisher).toBe(local.embeddedBroker);
    expect(none.signalPublisher).toBe(noBrokerPublisher);
    expect(none.signalChannel('web1')).toBeUndefined();
    expect(local.signalChannel('web1')).toEqual({
      url: 'mqtt://127.0.0.1:4601',
      username: 'web1',
      topic: 'mesh/nodes/web1/signal',
    });
  });

  it("puts events on the stack's bus with MESH_EVENT_BUS_NAME, posts them to the webhook locally, and nowhere with neither", () => {
    const onAws = readConfig({ ...configEnvironment({ ...config, eventBusName: 'Mesh-Events-1' }) });
    expect(onAws.eventBusName).toBe('Mesh-Events-1');
    expect(partsFor(onAws).events).toBeInstanceOf(EventBridgeEventSink);
    const hook = { url: 'http://127.0.0.1:9/events', secret: 'a-secret-of-sixteen-or-more' };
    expect(localPartsFor({ ...config, eventsWebhook: hook }).events).toBeInstanceOf(WebhookEventSink);
    expect(partsFor(config).events).toBe(noEvents);
    // the stores whose commits are told, wherever a handler or the queue's consumer reaches them
    const local = localPartsFor(config);
    expect(local.consumer.reports).toBeInstanceOf(AnnouncingReports);
    expect(local.applyJobs).toBeInstanceOf(AnnouncingApplyJobs);
    expect(local.auditReader).toBeInstanceOf(AnnouncingAuditReader);
    expect(local.presence).toBeInstanceOf(AnnouncingPresence);
    expect(() =>
      readConfig({ ...configEnvironment(config), MESH_EVENT_BUS_NAME: 'no spaces allowed' }),
    ).toThrow(/eventBusName/);
  });

  it('reads the hold bound from the configuration, and puts a replaced part everywhere it is used', () => {
    const log = new RecordingLog();
    const parts = localPartsFor(config, { overrides: { log } });

    expect(parts.consumer.holdPolicy.boundSeconds).toBe(30);
    expect(parts.consumer.log).toBe(log);
  });
});
