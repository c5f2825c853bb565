import type { IoTCustomAuthorizerEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { generateNodeKeys, type NodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { connectPassword, hostProof } from '../../lib/clients/host/proof.ts';
import { signalAuthorizerHandler } from '../../lib/server/api/handlers/signal.ts';
import { type IotPolicyDocument, iotArn, policyAllows } from '../../lib/server/core/signal/policy.ts';
import { checkConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { InMemoryNodeCredentials, InMemoryReplayGuard } from '../support/node-credentials.ts';

const start = Date.parse('2026-10-01T12:00:00Z');
const clock = { ms: start };
const now = () => new Date(clock.ms);
const scope = { partition: 'aws', region: 'eu-west-1', accountId: '123456789012' };
const config = checkConfig({
  region: scope.region,
  inventoryTable: 'mesh-inventory',
  identityTable: 'mesh-identity',
  controlQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/control.fifo',
  deadLetterQueueUrl: 'https://sqs.eu-west-1.amazonaws.com/123456789012/dead.fifo',
  signal: {
    brokerUrl: 'mqtts://a1-ats.iot.eu-west-1.amazonaws.com:443',
    authorizerName: 'mesh-signal',
    accountId: scope.accountId,
  },
});

/** An IoT custom authorizer event for an MQTT CONNECT, the password base64 as IoT passes it. */
function connectEvent(username: string | undefined, password: string | undefined, clientId = 'alpha') {
  return {
    signatureVerified: false,
    protocols: ['tls', 'mqtt'],
    protocolData: {
      tls: { serverName: 'a1-ats.iot.eu-west-1.amazonaws.com' },
      mqtt: {
        clientId,
        ...(username !== undefined ? { username } : {}),
        ...(password !== undefined ? { password: Buffer.from(password).toString('base64') } : {}),
      },
    },
    connectionMetadata: { id: 'c0ffee' },
  } satisfies IoTCustomAuthorizerEvent;
}

async function setup() {
  clock.ms = start;
  const credentials = new InMemoryNodeCredentials();
  const replayGuard = new InMemoryReplayGuard();
  const keys = new Map<string, NodeKeys>();
  for (const node of ['alpha', 'beta']) {
    keys.set(node, (await generateNodeKeys()).keys);
    credentials.enrol(node, keys.get(node) as NodeKeys);
  }
  const log = new RecordingLog();
  const authorize = signalAuthorizerHandler({ credentials, replayGuard, config, log, now });
  const password = (node: string, signer = node) =>
    connectPassword(signingKeyOf(node, keys.get(signer) as NodeKeys), { now });
  return { credentials, replayGuard, authorize, password, keys, log };
}

const username = (node: string) => `${node}?x-amz-customauthorizer-name=mesh-signal`;

describe('signalAuthorizerHandler', () => {
  it('lets a node connect with a fresh proof, allowing exactly its own client id and topics', async () => {
    const { authorize, password } = await setup();

    const answer = await authorize(connectEvent(username('alpha'), await password('alpha')));

    expect(answer).toMatchObject({
      isAuthenticated: true,
      principalId: Buffer.from('alpha').toString('hex'),
      disconnectAfterInSeconds: 86_400,
      refreshAfterInSeconds: 86_400,
    });
    expect(answer.principalId).toMatch(/^[a-zA-Z0-9]{1,128}$/);
    const documents = answer.policyDocuments as unknown as IotPolicyDocument[];
    const allowed = (
      action: Parameters<typeof policyAllows>[1],
      kind: 'client' | 'topic' | 'topicfilter',
      name: string,
    ) => policyAllows(documents, action, iotArn(scope, kind, name));
    expect(allowed('iot:Connect', 'client', 'alpha')).toBe(true);
    expect(allowed('iot:Subscribe', 'topicfilter', 'mesh/nodes/alpha/signal')).toBe(true);
    expect(allowed('iot:Receive', 'topic', 'mesh/nodes/alpha/signal')).toBe(true);
    expect(allowed('iot:Connect', 'client', 'beta')).toBe(false);
    expect(allowed('iot:Subscribe', 'topicfilter', 'mesh/nodes/beta/signal')).toBe(false);
    expect(allowed('iot:Receive', 'topic', 'mesh/nodes/beta/signal')).toBe(false);
    expect(allowed('iot:Publish', 'topic', 'mesh/nodes/alpha/signal')).toBe(false);
  });

  it('takes the bare node name as username too (the embedded broker has no authorizer name)', async () => {
    const { authorize, password } = await setup();

    expect((await authorize(connectEvent('alpha', await password('alpha')))).isAuthenticated).toBe(true);
  });

  it('refuses a password signed by another key, an expired one, and one used before', async () => {
    const { authorize, password, log } = await setup();
    const signedByBeta = await password('alpha', 'beta');
    const used = await password('alpha');
    await authorize(connectEvent(username('alpha'), used));
    clock.ms = start - 120_000;
    const expired = await password('alpha');
    clock.ms = start;

    const answers = await Promise.all(
      [signedByBeta, expired, used].map(
        async (pass) => (await authorize(connectEvent(username('alpha'), pass))).isAuthenticated,
      ),
    );

    expect(answers).toEqual([false, false, false]);
    expect(log.coded.map((line) => line.code)).toEqual(Array(3).fill('signal.connect-refused'));
  });

  it("refuses another node's password, and an HTTP proof in place of a connect proof", async () => {
    const { authorize, password, keys } = await setup();
    const betas = await password('beta');
    const httpProof = (
      await hostProof(
        signingKeyOf('alpha', keys.get('alpha') as NodeKeys),
        {
          method: 'GET',
          url: 'https://api.test/v1/hosts/alpha/declaration',
        },
        { now },
      )
    ).replace(/^MeshPoP /, '');

    const asAlphaWithBetas = await authorize(connectEvent(username('alpha'), betas));
    const httpInstead = await authorize(connectEvent(username('alpha'), httpProof));

    expect(asAlphaWithBetas.isAuthenticated).toBe(false);
    expect(httpInstead.isAuthenticated).toBe(false);
    expect(asAlphaWithBetas.policyDocuments).toEqual([]);
  });

  it('refuses a node that never enrolled, or whose enrolment was never completed', async () => {
    const { authorize, credentials } = await setup();
    const { keys: strays } = await generateNodeKeys();
    credentials.enrol('gamma', strays, { spent: false });
    const strayPassword = (node: string) => connectPassword(signingKeyOf(node, strays), { now });

    const never = await authorize(connectEvent(username('delta'), await strayPassword('delta'), 'delta'));
    const unspent = await authorize(connectEvent(username('gamma'), await strayPassword('gamma'), 'gamma'));

    expect([never.isAuthenticated, unspent.isAuthenticated]).toEqual([false, false]);
  });

  it('refuses a connect without username or password, or with a username that is no node name', async () => {
    const { authorize, password } = await setup();
    const good = await password('alpha');

    const answers = await Promise.all([
      authorize(connectEvent(undefined, good)),
      authorize(connectEvent(username('alpha'), undefined)),
      authorize(connectEvent('Not_A_Node', good)),
    ]);

    expect(answers.map((answer) => answer.isAuthenticated)).toEqual([false, false, false]);
  });

  it('throws when the store cannot be asked, so IoT refuses the connect and the host tries again', async () => {
    const { authorize, password, replayGuard } = await setup();
    replayGuard.unavailable = true;

    await expect(authorize(connectEvent(username('alpha'), await password('alpha')))).rejects.toThrow(
      /connection refused/,
    );
  });
});
