import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { generateNodeKeys, signingKeyOf } from '../../lib/clients/host/keys.ts';
import { hostProof } from '../../lib/clients/host/proof.ts';
import { hostDeclarationHandler } from '../../lib/server/api/handlers/host.ts';
import type { NodeCredentialReader } from '../../lib/server/core/host-identity/ports.ts';
import type { Delivery, DeliveryReader } from '../../lib/server/core/push/ports.ts';
import { type SignalChannel, signalChannelFor } from '../../lib/server/core/signal/channel.ts';

class InMemoryDeliveries implements DeliveryReader {
  readonly sent = new Map<string, Delivery>();
  async readDelivery(node: string) {
    return this.sent.get(node);
  }
}

async function setup(signalChannel?: (node: string) => SignalChannel | undefined) {
  const { keys } = await generateNodeKeys();
  const credentials: NodeCredentialReader = {
    readCredential: async (node, thumbprint) => ({
      key:
        node === 'alpha' && thumbprint === keys.thumbprint
          ? { node, thumbprint, signingKey: keys.signing.publicJwk, sealingKey: keys.sealing.publicJwk }
          : undefined,
      enrolledThumbprint: node === 'alpha' ? keys.thumbprint : undefined,
    }),
  };
  const deliveries = new InMemoryDeliveries();
  const handler = hostDeclarationHandler({
    deliveries,
    credentials,
    replayGuard: { rememberOnce: async () => true },
    ...(signalChannel ? { signalChannel } : {}),
  });
  const get = async (headers: Record<string, string> = {}): Promise<APIGatewayProxyResult> => {
    const path = '/hosts/alpha/declaration';
    const authorization = await hostProof(signingKeyOf('alpha', keys), {
      method: 'GET',
      url: `http://h${path}`,
    });
    return handler(
      {
        httpMethod: 'GET',
        path,
        headers: { authorization, ...headers },
        pathParameters: { node: 'alpha' },
        body: null,
        requestContext: { path },
      } as unknown as APIGatewayProxyEvent,
      {} as Context,
    );
  };
  return { deliveries, get };
}

const delivery: Delivery = {
  node: 'alpha',
  revision: 3,
  digest: 'd'.repeat(64),
  etag: `"${'d'.repeat(64)}"`,
  sentAt: '2026-10-01T12:00:00.000Z',
  declaration: { modules: ['web'] },
};

describe('GET /hosts/{node}/declaration', () => {
  it('answers 404 not_sent before anything was sent', async () => {
    const { get } = await setup();
    const answer = await get();
    expect([answer.statusCode, JSON.parse(answer.body).error.code]).toEqual([404, 'not_sent']);
  });

  it('answers the declaration with its ETag, and 304 when If-None-Match names it', async () => {
    const { deliveries, get } = await setup();
    deliveries.sent.set('alpha', delivery);

    const first = await get();
    const unchanged = await get({ 'If-None-Match': delivery.etag });
    const changed = await get({ 'If-None-Match': '"older"' });

    expect(first.statusCode).toBe(200);
    expect(first.headers?.etag).toBe(delivery.etag);
    expect(JSON.parse(first.body)).toMatchObject({ revision: 3, declaration: { modules: ['web'] } });
    expect([unchanged.statusCode, unchanged.body]).toEqual([304, '']);
    expect(changed.statusCode).toBe(200);
  });
});

describe('GET /hosts/{node}/declaration names the signal', () => {
  const broker = {
    brokerUrl: 'mqtts://a1-ats.iot.eu-west-1.amazonaws.com:443',
    authorizerName: 'mesh-signal',
  };

  it('says in Mesh-Signal where the node waits for its signal, on every answer', async () => {
    const { deliveries, get } = await setup((node) => signalChannelFor(broker, node));
    const notSent = await get();
    deliveries.sent.set('alpha', delivery);

    const answers = [notSent, await get(), await get({ 'If-None-Match': delivery.etag })];

    expect(answers.map((answer) => answer.statusCode)).toEqual([404, 200, 304]);
    for (const answer of answers) {
      expect(JSON.parse(String(answer.headers?.['mesh-signal']))).toEqual({
        url: 'mqtts://a1-ats.iot.eu-west-1.amazonaws.com:443',
        username: 'alpha?x-amz-customauthorizer-name=mesh-signal',
        topic: 'mesh/nodes/alpha/signal',
      });
    }
  });

  it('names nothing when the control plane has no broker', async () => {
    const { deliveries, get } = await setup(() => undefined);
    deliveries.sent.set('alpha', delivery);

    expect((await get()).headers?.['mesh-signal']).toBeUndefined();
  });
});
