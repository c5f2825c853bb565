import { Agent } from 'node:https';
import type { LookupFunction } from 'node:net';
import { IoTDataPlaneClient, PublishCommand } from '@aws-sdk/client-iot-data-plane';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readAssembly } from '../../tools/rehearsal/assembly.ts';
import { AwsEndpoint } from '../../tools/rehearsal/aws-endpoint.ts';
import { CustomResourceResponses } from '../../tools/rehearsal/custom-resources.ts';
import { type FunctionDefinition, readFunctions } from '../../tools/rehearsal/function-definitions.ts';
import { IamCheck } from '../../tools/rehearsal/iam-check.ts';
import { TemplatePolicies } from '../../tools/rehearsal/iam-policies.ts';
import { IotCore } from '../../tools/rehearsal/iot-core.ts';
import { httpsNamesOf, iotDataHostOf } from '../../tools/rehearsal/iot-endpoint.ts';
import { readIotModel } from '../../tools/rehearsal/iot-model.ts';
import { LambdaService } from '../../tools/rehearsal/lambda-service.ts';
import { RehearsalLedger } from '../../tools/rehearsal/ledger.ts';
import { stackOnRehearsal } from '../../tools/rehearsal/rehearsal.ts';
import { projectRoot } from '../../tools/rehearsal/synth.ts';
import { rehearsalCertificate } from '../../tools/rehearsal/tls-certificate.ts';

/**
 * The IoT data plane as the synthesized stack's functions reach it: a real Publish, signed with
 * a function's role credentials, over TLS to the rehearsal's data endpoint, checked against the
 * role's policies before IoT takes it. No emulator is needed: nothing here touches a table.
 */
const assembly = readAssembly(inject('rehearsalCdkOut'));
const region = assembly.region ?? 'us-east-1';
const iotDataHost = iotDataHostOf(assembly.stackName, region);
const certificate = rehearsalCertificate(httpsNamesOf(iotDataHost));
const ledger = new RehearsalLedger();
let endpoint: AwsEndpoint;
let lambda: LambdaService;
let iot: IotCore;
let functions: FunctionDefinition[];

const loopback: LookupFunction = (_hostname, options, callback) =>
  options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);

beforeAll(async () => {
  endpoint = await AwsEndpoint.listen(certificate);
  const { environment, references } = stackOnRehearsal(assembly, {
    region,
    awsEndpointHost: endpoint.host,
    iotDataHost,
  });
  const iam = new IamCheck(new TemplatePolicies(references), references, ledger);
  functions = readFunctions(assembly, references);
  lambda = new LambdaService(functions, {
    region,
    iam,
    ledger,
    runtimeDir: projectRoot,
    awsEndpointUrl: endpoint.url,
    https: { port: endpoint.httpsPort, caPem: certificate.caPem },
    maxInstances: 1,
    onLog: () => undefined,
  });
  const { account, partition } = environment;
  iot = new IotCore({
    model: readIotModel(references, lambda),
    ...{ lambda, iam, ledger, partition, region, account, iotDataHost },
    onLog: () => undefined,
  });
  endpoint.route({
    lambda,
    iam,
    ledger,
    callContext: { region, account, partition, tableKeys: () => undefined },
    upstream: { dynamodb: 'http://127.0.0.1:9', sqs: 'http://127.0.0.1:9' },
    states: { serve: async () => ({ status: 500, body: {} }) },
    iot,
    responses: new CustomResourceResponses(),
  });
});

afterAll(async () => {
  await lambda?.stop();
  await endpoint?.stop();
});

/** The data plane client as a function builds it (lib/adapters/aws-clients.ts), signing as `displayName`'s role. */
function publisherAs(displayName: string) {
  const fn = functions.find((candidate) => candidate.displayName === displayName) as FunctionDefinition;
  return new IoTDataPlaneClient({
    region,
    endpoint: `https://${iotDataHost}:${endpoint.httpsPort}`,
    credentials: lambda.credentials(fn),
    maxAttempts: 1,
    requestHandler: { httpsAgent: new Agent({ ca: certificate.caPem, lookup: loopback }) },
  });
}

const publish = (displayName: string, topic: string) =>
  publisherAs(displayName).send(
    new PublishCommand({ topic, qos: 1, retain: true, payload: Buffer.from('{"revision":1,"etag":"e"}') }),
  );

describe('the rehearsal’s IoT data plane', () => {
  it('takes a push function’s retained signal on a node’s signal topic, and keeps it', async () => {
    await publish('Functions/PushBegin', 'mesh/nodes/app/signal');

    expect(iot.retainedMessages().map((message) => [message.topic, message.publisher])).toEqual([
      ['mesh/nodes/app/signal', 'Functions/PushBegin'],
    ]);
    expect(Object.fromEntries(ledger.calls.get('Functions/PushBegin') ?? [])).toMatchObject({
      'iot:Publish': 1,
      'iot:RetainPublish': 1,
    });
  });

  it('refuses a publish outside mesh/nodes/*/signal by the role’s policy, naming action and topic', async () => {
    await expect(publish('Functions/PushSend', 'mesh/nodes/app/config')).rejects.toMatchObject({
      name: 'ForbiddenException',
    });
    await expect(publish('Functions/MeshStatus', 'mesh/nodes/app/signal')).rejects.toMatchObject({
      name: 'ForbiddenException',
    });

    const topic = (name: string) => `arn:aws:iot:${region}:000000000000:topic/${name}`;
    expect(ledger.denials.map(({ principal, action, resource }) => [principal, action, resource])).toEqual([
      ['Functions/PushSend', 'iot:Publish', topic('mesh/nodes/app/config')],
      ['Functions/MeshStatus', 'iot:Publish', topic('mesh/nodes/app/signal')],
    ]);
    expect(iot.published.map((message) => message.topic)).toEqual(['mesh/nodes/app/signal']);
  });
});
