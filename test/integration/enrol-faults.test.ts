import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrolHandler } from '../../lib/server/api/handlers/enrolment.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { presenterOf } from '../../lib/server/core/enrolment/keys.ts';
import type { TokenStore } from '../../lib/server/core/enrolment/ports.ts';
import { issueToken } from '../../lib/server/core/enrolment/tokens.ts';
import { StoreUnavailableError } from '../../lib/server/core/unavailable.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { provisionTestResources } from '../support/resources.ts';
import { KeysThenFault, StoppableStore } from '../support/stoppable-store.ts';
import { enrolmentFixture, presenterKeys } from './enrol-fixtures.ts';

const call = (handler: ReturnType<typeof enrolHandler>, body: unknown) =>
  handler(
    { httpMethod: 'POST', path: '/enrol', headers: {}, body: JSON.stringify(body) } as APIGatewayProxyEvent,
    {} as Context,
  );
const code = (answer: APIGatewayProxyResult) =>
  answer.statusCode === 200
    ? 'enrolled'
    : (JSON.parse(answer.body) as { error: { code: string } }).error.code;

async function assertNothingHalfDone(
  fixture: ReturnType<typeof enrolmentFixture>,
  node: string,
  keys: Awaited<ReturnType<typeof presenterKeys>>,
) {
  const { thumbprint, presenter } = await presenterOf(keys);
  const identity = (await fixture.scan('identity')).filter((item) => item.pk === `node#${node}`);
  const inventory = (await fixture.scan('inventory')).filter((item) => item.pk === `node#${node}`);
  expect(identity.filter((item) => String(item.sk).startsWith('key#'))).toEqual([
    expect.objectContaining({ thumbprint, presenter }),
  ]);
  expect(identity.find((item) => item.sk === 'enrolled')).toMatchObject({ thumbprint });
  expect(inventory.find((item) => item.sk === 'token')).toMatchObject({ spentBy: presenter, thumbprint });
  expect(inventory.find((item) => item.sk === 'enrolment')).toMatchObject({ thumbprint, presenter });
}

describe('enrolment when the store goes away between the writes and the spend', () => {
  let config: MeshConfig;
  beforeAll(async () => {
    config = await provisionTestResources('enrolfault');
  });

  it('answers "try again" and completes on the same presenter\'s retry (the spend cannot be asked)', async () => {
    const fixture = enrolmentFixture(config);
    await fixture.addNode('faulty');
    const { token } = await issueToken('faulty', 3600, { tokens: fixture.tokens }, localActor());
    let storeAway = false;
    const tokens: TokenStore = {
      read: (node) => fixture.tokens.read(node),
      issue: (t, p) => fixture.tokens.issue(t, p, localActor()),
      revoke: (node, at) => fixture.tokens.revoke(node, at, localActor()),
      claim: (request) => fixture.tokens.claim(request),
      spend: async (request) => {
        if (storeAway)
          throw new StoreUnavailableError('the inventory table', {
            cause: new Error('connect ECONNREFUSED'),
          });
        return fixture.tokens.spend(request);
      },
    };
    const keyStore = new KeysThenFault(fixture.keys, async () => {
      storeAway = true;
    });
    const handler = enrolHandler({ tokens, nodeKeys: keyStore, sender: fixture.sender });
    const keys = await presenterKeys();

    const first = await call(handler, { node: 'faulty', token, keys });
    storeAway = false;
    const retry = await call(handler, { node: 'faulty', token, keys });

    expect([first.statusCode, code(first), first.headers?.['retry-after']]).toEqual([503, 'try_again', '2']);
    expect(code(retry)).toBe('enrolled');
    await assertNothingHalfDone(fixture, 'faulty', keys);
  });
});

describe('enrolment when DynamoDB Local is really stopped between the writes and the spend', () => {
  let store: StoppableStore;

  beforeAll(async () => {
    store = await StoppableStore.start('enrol-fault');
  });

  afterAll(async () => {
    await store?.remove();
  });

  it('answers "try again" while it is down and completes the same presenter\'s retry once it is back', async () => {
    const { client, config } = await store.tables('stopped');
    const fixture = enrolmentFixture(config, client);
    await fixture.addNode('stopped');
    // The store's first transactions on a cold JVM can outlast the one-attempt client's timeout:
    // "try again", and the issue is asked again, as an operator would.
    const issue = () => issueToken('stopped', 3600, { tokens: fixture.tokens }, localActor());
    const { token } = await issue().catch((error: unknown) => {
      if (error instanceof StoreUnavailableError) return issue();
      throw error;
    });
    const keyStore = new KeysThenFault(fixture.keys, () => store.stop());
    const handler = enrolHandler({ tokens: fixture.tokens, nodeKeys: keyStore, sender: fixture.sender });
    const keys = await presenterKeys();

    const whileDown = await call(handler, { node: 'stopped', token, keys });
    await store.restart();
    const afterwards = await call(handler, { node: 'stopped', token, keys });

    expect([whileDown.statusCode, code(whileDown)]).toEqual([503, 'try_again']);
    expect(whileDown.headers?.['retry-after']).toBeDefined();
    expect(code(afterwards)).toBe('enrolled');
    await assertNothingHalfDone(fixture, 'stopped', keys);
  });
});
