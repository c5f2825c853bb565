import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateTableCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeDynamoDBClient } from '../../lib/adapters/aws-clients.ts';
import { enrolHandler } from '../../lib/api/handlers/enrolment.ts';
import type { MeshConfig } from '../../lib/config.ts';
import { presenterOf } from '../../lib/core/enrolment/keys.ts';
import type { NodeKeyStore, TokenStore } from '../../lib/core/enrolment/ports.ts';
import { issueToken } from '../../lib/core/enrolment/tokens.ts';
import type { NodeKeyRecord } from '../../lib/core/host-identity/ports.ts';
import { StoreUnavailableError } from '../../lib/core/unavailable.ts';
import { identityTable, inventoryTable, localResourceNames } from '../../lib/resources.ts';
import { type RunningDynamoDBLocal, startDynamoDBLocal } from '../../lib/runtime/dynamodb-local.ts';
import { createTableInput } from '../../lib/runtime/provision.ts';
import { freePort } from '../../lib/runtime/tcp-ports.ts';
import { provisionTestResources } from '../support/resources.ts';
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

/** Writes node keys, then runs `afterWrite` (the store goes away) before answering. */
class KeysThenFault implements NodeKeyStore {
  armed = true;
  private readonly inner: NodeKeyStore;
  private readonly afterWrite: () => Promise<void>;
  constructor(inner: NodeKeyStore, afterWrite: () => Promise<void>) {
    this.inner = inner;
    this.afterWrite = afterWrite;
  }
  async putKeys(record: NodeKeyRecord & { presenter: string; storedAt: string; tokenId: string }) {
    await this.inner.putKeys(record);
    if (this.armed) {
      this.armed = false;
      await this.afterWrite();
    }
  }
  pruneOtherKeys(node: string, keep: string, tokenIds: readonly string[]) {
    return this.inner.pruneOtherKeys(node, keep, tokenIds);
  }
}

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
    const { token } = await issueToken('faulty', 3600, { tokens: fixture.tokens });
    let storeAway = false;
    const tokens: TokenStore = {
      read: (node) => fixture.tokens.read(node),
      issue: (t, p) => fixture.tokens.issue(t, p),
      revoke: (node, at) => fixture.tokens.revoke(node, at),
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
    const handler = enrolHandler({ tokens, nodeKeys: keyStore });
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
  let dataDir: string;
  let store: RunningDynamoDBLocal;
  let port: number;

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'mesh-enrol-fault-'));
    port = await freePort();
    store = await startDynamoDBLocal({ port, dataDir });
  });

  afterAll(async () => {
    await store?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers "try again" while it is down and completes the same presenter\'s retry once it is back', async () => {
    const names = localResourceNames('stopped');
    const client = makeDynamoDBClient({ region: 'us-east-1' }, { endpoint: store.endpoint, maxAttempts: 1 });
    for (const [table, name] of [
      [inventoryTable, names.inventoryTable],
      [identityTable, names.identityTable],
    ] as const) {
      await client.send(new CreateTableCommand(createTableInput(table, name)));
      await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: name });
    }
    const config = {
      region: 'us-east-1',
      inventoryTable: names.inventoryTable,
      identityTable: names.identityTable,
    } as MeshConfig;
    const fixture = enrolmentFixture(config, client);
    await fixture.addNode('stopped');
    const { token } = await issueToken('stopped', 3600, { tokens: fixture.tokens });
    const keyStore = new KeysThenFault(fixture.keys, () => store.stop());
    const handler = enrolHandler({ tokens: fixture.tokens, nodeKeys: keyStore });
    const keys = await presenterKeys();

    const whileDown = await call(handler, { node: 'stopped', token, keys });
    store = await startDynamoDBLocal({ port, dataDir });
    const afterwards = await call(handler, { node: 'stopped', token, keys });

    expect([whileDown.statusCode, code(whileDown)]).toEqual([503, 'try_again']);
    expect(whileDown.headers?.['retry-after']).toBeDefined();
    expect(code(afterwards)).toBe('enrolled');
    await assertNothingHalfDone(fixture, 'stopped', keys);
  });
});
