import { describe, expect, it } from 'vitest';
import { awsManagedPolicy } from '../../../tools/rehearsal/aws-managed-policies.ts';
import type { CallContext } from '../../../tools/rehearsal/aws-requests.ts';
import { customResourceIdentity } from '../../../tools/rehearsal/custom-resource-identity.ts';
import { invalidAnswer } from '../../../tools/rehearsal/iot-answers.ts';
import { topicMatches } from '../../../tools/rehearsal/iot-model.ts';
import { readIotCall } from '../../../tools/rehearsal/iot-requests.ts';
import { environment } from './fixture.ts';

const context: CallContext = {
  region: 'eu-west-1',
  account: '000000000000',
  partition: 'aws',
  tableKeys: () => undefined,
};
const topicArn = (topic: string) => `arn:aws:iot:eu-west-1:000000000000:topic/${topic}`;

describe('readIotCall', () => {
  it('reads a retained Publish as iot:Publish and iot:RetainPublish on the topic', () => {
    const url = new URL(
      'https://x/topics/mesh%2Fnodes%2Fapp%2Fsignal?contentType=application%2Fjson&qos=1&retain=true',
    );
    expect(readIotCall('iotdata', 'POST', url, context)).toEqual({
      service: 'iotdata',
      operation: 'Publish',
      input: { topic: 'mesh/nodes/app/signal', qos: 1, retain: true },
      accesses: [
        { action: 'iot:Publish', resource: topicArn('mesh/nodes/app/signal') },
        { action: 'iot:RetainPublish', resource: topicArn('mesh/nodes/app/signal') },
      ],
    });
  });

  it('needs iot:Publish alone for a publish that is not retained', () => {
    const call = readIotCall('iotdata', 'POST', new URL('https://x/topics/a%2Fb?qos=0'), context);
    expect(call).toMatchObject({ accesses: [{ action: 'iot:Publish', resource: topicArn('a/b') }] });
  });

  it('reads DescribeEndpoint, and refuses an IoT operation it does not serve', () => {
    const describe = readIotCall(
      'iot',
      'GET',
      new URL('https://x/endpoint?endpointType=iot%3AData-ATS'),
      context,
    );
    expect(describe).toMatchObject({
      operation: 'DescribeEndpoint',
      input: { endpointType: 'iot:Data-ATS' },
      accesses: [{ action: 'iot:DescribeEndpoint', resource: '*' }],
    });
    expect(readIotCall('iotdata', 'GET', new URL('https://x/retainedMessage/a'), context)).toEqual({
      unreadable: 'IoT data plane GET /retainedMessage/a is an operation the rehearsal does not serve',
    });
  });
});

describe('topicMatches', () => {
  it('matches MQTT topic filters: + one level, a trailing # any number', () => {
    const presence = '$aws/events/presence/+/+';
    expect(topicMatches(presence, '$aws/events/presence/connected/app')).toBe(true);
    expect(topicMatches(presence, '$aws/events/presence/connected')).toBe(false);
    expect(topicMatches(presence, 'mesh/nodes/app/signal')).toBe(false);
    expect(topicMatches('mesh/#', 'mesh/nodes/app/signal')).toBe(true);
    expect(topicMatches('mesh/nodes/app/signal', 'mesh/nodes/app/signal')).toBe(true);
  });
});

describe('invalidAnswer', () => {
  const allow = {
    isAuthenticated: true,
    principalId: '617070',
    disconnectAfterInSeconds: 86_400,
    refreshAfterInSeconds: 86_400,
    policyDocuments: [{ Version: '2012-10-17', Statement: [] }],
  };

  it('takes an answer IoT takes, policy documents as objects or JSON strings', () => {
    expect(invalidAnswer(allow)).toBeUndefined();
    expect(invalidAnswer({ ...allow, policyDocuments: [JSON.stringify({ Statement: [] })] })).toBeUndefined();
  });

  it('names what IoT would refuse', () => {
    expect(invalidAnswer({ ...allow, principalId: 'app-1' })).toMatch(/principalId "app-1" is not 1 to 128/);
    expect(invalidAnswer({ ...allow, refreshAfterInSeconds: 60 })).toMatch(/refreshAfterInSeconds 60/);
    expect(invalidAnswer({ ...allow, policyDocuments: Array(11).fill({ Statement: [] }) })).toMatch(
      /over IoT's 10/,
    );
    expect(invalidAnswer({ ...allow, isAuthenticated: 'yes' })).toMatch(/isAuthenticated boolean/);
  });
});

describe('customResourceIdentity', () => {
  const describeEndpoint = (endpointType: string) => ({
    Type: 'Custom::AWS',
    Properties: {
      Create: JSON.stringify({
        service: 'Iot',
        action: 'describeEndpoint',
        parameters: { endpointType },
        physicalResourceId: { id: 'iot-data-ats-endpoint' },
      }),
    },
  });

  it('answers the IoT data endpoint lookup with the rehearsal’s own endpoint', () => {
    expect(customResourceIdentity(describeEndpoint('iot:Data-ATS'), environment, 'Mesh-X')).toEqual({
      ref: 'iot-data-ats-endpoint',
      attributes: { endpointAddress: environment.iotDataHost },
    });
  });

  it('gives any other custom resource no attributes to refer to', () => {
    expect(customResourceIdentity(describeEndpoint('iot:Jobs'), environment, 'Mesh-X')).toEqual({
      ref: 'Mesh-X',
      attributes: {},
    });
    expect(
      customResourceIdentity({ Type: 'Custom::Other', Properties: {} }, environment, 'Mesh-Y').attributes,
    ).toEqual({});
  });
});

describe('awsManagedPolicy', () => {
  it('knows the basic execution role CDK gives its own functions, and nothing it cannot read', () => {
    expect(
      awsManagedPolicy('arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole')?.Statement[0]
        ?.Action,
    ).toEqual(['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents']);
    expect(awsManagedPolicy('arn:aws:iam::aws:policy/AdministratorAccess')).toBeUndefined();
  });
});
