import {
  type DynamoDBClient,
  PutItemCommand,
  QueryCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { generateNodeKeys } from '../lib/clients/host/keys.ts';
import { startLocalApi } from '../lib/local/http-server.ts';
import { localPartsFor } from '../lib/local/parts.ts';
import { makeDynamoDBClient } from '../lib/server/adapters/aws-clients.ts';
import { nodeItemKey } from '../lib/server/adapters/dynamodb/keys.ts';
import { claimCondition, spendCondition } from '../lib/server/adapters/enrolment/token-store.ts';
import { enrolHandler } from '../lib/server/api/handlers/enrolment.ts';
import { localActor } from '../lib/server/core/audit/record.ts';
import { parseToken } from '../lib/server/core/enrolment/token.ts';
import { issueToken } from '../lib/server/core/enrolment/tokens.ts';
import type { MeshConfig } from '../lib/server/setup/config.ts';
import { benchEnvironment } from './support/environment.ts';
import { median, percentile } from './support/stats.ts';
import type { BenchTable } from './support/table.ts';

type Prepared = { node: string; token: string; body: string };

/**
 * Enrolment against DynamoDB Local: what one enrolment costs end to end (over the local HTTP
 * server, which calls the same handlers in-process with API Gateway events, and calling the
 * handler directly), next to the bare store work it needs (claim, key put, spend transaction,
 * prune query, sent raw with the SDK); then enrolments per second with 20 hosts at once.
 */
export async function run(): Promise<BenchTable[]> {
  const environment = await benchEnvironment();
  try {
    const config = await environment.provision('bench-enrol');
    const dynamodb = makeDynamoDBClient(config);
    const parts = localPartsFor(config);
    const { tokens } = parts;
    let serial = 0;
    const prepare = async (count: number): Promise<Prepared[]> =>
      Promise.all(
        Array.from({ length: count }, async () => {
          serial += 1;
          const node = `bench-${serial}`;
          await dynamodb.send(
            new PutItemCommand({
              TableName: config.inventoryTable,
              Item: { pk: { S: nodeItemKey(node).pk }, sk: { S: 'node' } },
            }),
          );
          const { token } = await issueToken(node, 3600, { tokens }, localActor());
          const { keys: nodeKeys } = await generateNodeKeys();
          const body = JSON.stringify({
            node,
            token,
            keys: { signing: nodeKeys.signing.publicJwk, sealing: nodeKeys.sealing.publicJwk },
          });
          return { node, token, body };
        }),
      );

    const count = 100;
    const api = await startLocalApi({ port: 0, parts });
    const handler = enrolHandler(parts);
    const overHttp = async (item: Prepared) => {
      const answer = await fetch(`${api.url}/enrol`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: item.body,
      });
      await answer.text();
      if (answer.status !== 200) throw new Error(`enrol answered ${answer.status}`);
    };
    const direct = async (item: Prepared) => {
      const answer = await handler(
        { httpMethod: 'POST', path: '/enrol', headers: {}, body: item.body } as APIGatewayProxyEvent,
        {} as Context,
      );
      if (answer.statusCode !== 200) throw new Error(`enrol answered ${answer.statusCode}`);
    };

    await timeEach(await prepare(10), overHttp); // warm-up: module loading, connections
    const httpTimes = await timeEach(await prepare(count), overHttp);
    const directTimes = await timeEach(await prepare(count), direct);
    const bare = await bareStoreWork(dynamodb, config, await prepare(count));

    const hosts = 20;
    const perHost = 10;
    const burst = await prepare(hosts * perHost);
    const started = performance.now();
    const concurrentTimes: number[] = [];
    await Promise.all(
      Array.from({ length: hosts }, async (_, host) => {
        for (let index = 0; index < perHost; index += 1) {
          const item = burst[host * perHost + index] as Prepared;
          const at = performance.now();
          await overHttp(item);
          concurrentTimes.push(performance.now() - at);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    await api.stop();
    dynamodb.destroy();

    const bareMedian = median(bare.total);
    const row = (name: string, times: number[]) => [
      name,
      times.length,
      median(times),
      percentile(times, 90),
      median(times) / bareMedian,
    ];
    return [
      {
        title: 'Enrolment latency vs the bare store work it needs (ms, DynamoDB Local)',
        columns: ['operation', 'n', 'median', 'p90', 'x bare'],
        rows: [
          row('POST /enrol over the local HTTP server', httpTimes),
          row('enrol handler called in-process', directTimes),
          row('bare: claim (conditional UpdateItem)', bare.claim),
          row('bare: node keys (PutItem, identity)', bare.put),
          row('bare: spend (TransactWriteItems, conditional)', bare.spend),
          row('bare: prune (Query, identity)', bare.prune),
          row('bare: all four in sequence', bare.total),
        ],
        notes: ['x bare = median / median of the four bare calls in sequence'],
      },
      {
        title: `Enrolment throughput, ${hosts} concurrent hosts over the local HTTP server`,
        columns: ['hosts', 'enrolments', 'seconds', 'enrolments/s', 'median ms', 'p90 ms'],
        rows: [
          [
            hosts,
            hosts * perHost,
            seconds,
            (hosts * perHost) / seconds,
            median(concurrentTimes),
            percentile(concurrentTimes, 90),
          ],
        ],
      },
    ];
  } finally {
    await environment.stop();
  }
}

async function timeEach(items: Prepared[], fn: (item: Prepared) => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  for (const item of items) {
    const started = performance.now();
    await fn(item);
    times.push(performance.now() - started);
  }
  return times;
}

/** The same four store calls an enrolment makes, sent raw, one enrolment's worth at a time. */
async function bareStoreWork(client: DynamoDBClient, config: MeshConfig, items: Prepared[]) {
  const result = {
    claim: [] as number[],
    put: [] as number[],
    spend: [] as number[],
    prune: [] as number[],
    total: [] as number[],
  };
  const timed = async (into: number[], send: () => Promise<unknown>) => {
    const started = performance.now();
    await send();
    into.push(performance.now() - started);
  };
  for (const item of items) {
    const { tokenId, secretHash } = parseToken(item.token);
    const pk = nodeItemKey(item.node).pk;
    const now = Date.now();
    const started = performance.now();
    await timed(result.claim, () =>
      client.send(
        new UpdateItemCommand({
          TableName: config.inventoryTable,
          Key: { pk: { S: pk }, sk: { S: 'token' } },
          UpdateExpression: 'SET claimedBy = :presenter, claimedAt = :claimedAt, leaseUntilMs = :leaseUntil',
          ConditionExpression: claimCondition,
          ExpressionAttributeValues: {
            ':tokenId': { S: tokenId },
            ':secretHash': { S: secretHash },
            ':presenter': { S: 'bench' },
            ':now': { N: String(now) },
            ':leaseUntil': { N: String(now + 30_000) },
            ':claimedAt': { S: new Date(now).toISOString() },
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      ),
    );
    await timed(result.put, () =>
      client.send(
        new PutItemCommand({
          TableName: config.identityTable,
          Item: { pk: { S: pk }, sk: { S: 'key#bench' }, signingKey: { M: { x: { S: 'x'.repeat(43) } } } },
        }),
      ),
    );
    await timed(result.spend, () =>
      client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Update: {
                TableName: config.inventoryTable,
                Key: { pk: { S: pk }, sk: { S: 'token' } },
                UpdateExpression: 'SET spentBy = :presenter, spentAt = :spentAt REMOVE leaseUntilMs',
                ConditionExpression: spendCondition,
                ExpressionAttributeValues: {
                  ':tokenId': { S: tokenId },
                  ':presenter': { S: 'bench' },
                  ':spentAt': { S: new Date().toISOString() },
                },
              },
            },
            {
              Put: {
                TableName: config.inventoryTable,
                Item: { pk: { S: pk }, sk: { S: 'enrolment' }, enrolledAt: { S: new Date().toISOString() } },
              },
            },
          ],
        }),
      ),
    );
    await timed(result.prune, () =>
      client.send(
        new QueryCommand({
          TableName: config.identityTable,
          KeyConditionExpression: 'pk = :pk AND begins_with(sk, :key)',
          ExpressionAttributeValues: { ':pk': { S: pk }, ':key': { S: 'key#' } },
          ConsistentRead: true,
        }),
      ),
    );
    result.total.push(performance.now() - started);
  }
  return result;
}
