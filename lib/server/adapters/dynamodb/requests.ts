import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  BatchWriteCommand,
  DynamoDBDocumentClient,
  paginateQuery,
  paginateScan,
  QueryCommand,
  type QueryCommandInput,
  type ScanCommandInput,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { mapLimit } from '../../core/map-limit.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';

/**
 * The one way Mesh talks to DynamoDB. Every store is a class built from `{ client, tableName }`
 * with the DocumentClient (plain JavaScript values in and out); every request goes through
 * `askStore`, so a store that cannot be asked is always the core's StoreUnavailableError; every
 * conditional write names its condition parts and asks for the item as it was (`ALL_OLD`);
 * only a failed condition becomes a domain error, read with `conditionFailed` or
 * `failedConditions` below.
 */
export type Item = Record<string, unknown>;
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A DocumentClient that drops undefined attributes, so optional fields are simply absent. */
export function documentClient(client: DynamoDBClient): DynamoDBDocumentClient {
  return DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
}

// Condition parts every store uses.
/** DynamoDB's bound on the items of one TransactWriteItems. */
export const transactionLimit = 100;

export const itemAbsent = 'attribute_not_exists(pk)';
export const itemPresent = 'attribute_exists(pk)';

export const allOld = { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } as const;

/** The item as it was when a conditional write did not hold; undefined when the error is anything else. */
export function conditionFailed(error: unknown): { readonly old: Item | undefined } | undefined {
  if (!(error instanceof ConditionalCheckFailedException)) return undefined;
  return { old: error.Item ? unmarshall(error.Item) : undefined };
}

/**
 * Per item of a cancelled transaction, whether its condition failed (with the item as it was);
 * undefined when the error is not a cancellation in which some condition failed.
 */
function failedConditions(error: unknown): Array<{ readonly old: Item | undefined } | undefined> | undefined {
  if (!(error instanceof TransactionCanceledException)) return undefined;
  const reasons = error.CancellationReasons ?? [];
  if (!reasons.some((reason) => reason.Code === 'ConditionalCheckFailed')) return undefined;
  return reasons.map((reason) =>
    reason.Code === 'ConditionalCheckFailed'
      ? { old: reason.Item ? unmarshall(reason.Item) : undefined }
      : undefined,
  );
}

/** Every page of a query. */
export function queryAll(
  client: DynamoDBDocumentClient,
  what: string,
  input: QueryCommandInput,
): Promise<Item[]> {
  return askStore(what, async () => {
    const items: Item[] = [];
    for await (const page of paginateQuery({ client }, input)) items.push(...(page.Items ?? []));
    return items;
  });
}

/** Every page of a scan (of one segment, when the input names one). */
export function scanAll(
  client: DynamoDBDocumentClient,
  what: string,
  input: ScanCommandInput,
): Promise<Item[]> {
  return askStore(what, async () => {
    const items: Item[] = [];
    for await (const page of paginateScan({ client }, input)) items.push(...(page.Items ?? []));
    return items;
  });
}

/** The newest `limit` items of one partition whose sort keys sort by time, read strongly. */
export async function newestItems(
  client: DynamoDBDocumentClient,
  what: string,
  input: { readonly tableName: string; readonly partition: string; readonly limit: number },
): Promise<Item[]> {
  const { Items } = await askStore(what, () =>
    client.send(
      new QueryCommand({
        TableName: input.tableName,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': input.partition },
        ScanIndexForward: false,
        Limit: input.limit,
        ConsistentRead: true,
      }),
    ),
  );
  return Items ?? [];
}

/** BatchGetItem takes 100 keys, BatchWriteItem 25 requests; what the store leaves unprocessed is asked again this many times. */
const keysPerGet = 100;
const requestsPerWrite = 25;
const unprocessedRounds = 8;
/** Batch requests of one read or write in flight at once. */
const requestsInFlight = 4;

type Key = { readonly pk: string; readonly sk: string };
const keyText = (key: Record<string, unknown>) => `${key.pk}|${key.sk}`;

/** Items by key (`pk|sk`), read strongly, 100 keys a request; a key that is absent is not in the map. */
export async function getItems(
  client: DynamoDBDocumentClient,
  what: string,
  tableName: string,
  keys: readonly Key[],
): Promise<Map<string, Item>> {
  const found = new Map<string, Item>();
  const unique = [...new Map(keys.map((key) => [keyText(key), key])).values()];
  const batches: Array<Array<Record<string, unknown>>> = [];
  for (let at = 0; at < unique.length; at += keysPerGet) batches.push(unique.slice(at, at + keysPerGet));
  await mapLimit(batches, requestsInFlight, async (batch) => {
    let pending = batch;
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === unprocessedRounds)
        throw new StoreUnavailableError(`reading ${pending.length} items of ${what}`, {
          cause: new Error('left unprocessed'),
        });
      const asked = pending;
      const answer = await askStore(what, () =>
        client.send(
          new BatchGetCommand({ RequestItems: { [tableName]: { Keys: asked, ConsistentRead: true } } }),
        ),
      );
      for (const item of answer.Responses?.[tableName] ?? []) found.set(keyText(item), item);
      pending = answer.UnprocessedKeys?.[tableName]?.Keys ?? [];
    }
  });
  return found;
}

/** Unconditional puts and deletes, 25 a request; for items no condition guards (written before what names them). */
export async function writeItems(
  client: DynamoDBDocumentClient,
  what: string,
  tableName: string,
  writes: { readonly puts?: readonly Item[]; readonly deletes?: readonly Key[] },
): Promise<void> {
  const requests = [
    ...(writes.puts ?? []).map((Item) => ({ PutRequest: { Item } })),
    ...(writes.deletes ?? []).map((Key) => ({ DeleteRequest: { Key } })),
  ];
  const batches: Array<Array<Record<string, unknown>>> = [];
  for (let at = 0; at < requests.length; at += requestsPerWrite)
    batches.push(requests.slice(at, at + requestsPerWrite));
  await mapLimit(batches, requestsInFlight, async (batch) => {
    let pending = batch;
    for (let round = 0; pending.length > 0; round += 1) {
      if (round === unprocessedRounds)
        throw new StoreUnavailableError(`writing ${pending.length} items of ${what}`, {
          cause: new Error('left unprocessed'),
        });
      const asked = pending;
      const answer = await askStore(what, () =>
        client.send(new BatchWriteCommand({ RequestItems: { [tableName]: asked } })),
      );
      pending = answer.UnprocessedItems?.[tableName] ?? [];
    }
  });
}

/** Adds `ALL_OLD` to each item of a transaction, so a failed condition says what it found. */
function withOldOnFailure(items: readonly TransactItem[]): TransactItem[] {
  return items.map((item) => {
    const [kind, body] = Object.entries(item)[0] as [string, object];
    return { [kind]: { ...body, ...allOld } } as TransactItem;
  });
}

/**
 * Runs a transaction; undefined when it held, else per item whether its condition failed (with
 * the item as it was). One cancelled by a conflict alone is asked again by `askStore`; a
 * cancellation for any other reason (a throttle, conflicts past the attempts) is the store
 * answering "not now", StoreUnavailableError like any other.
 */
export async function transact(
  client: DynamoDBDocumentClient,
  what: string,
  items: readonly TransactItem[],
  options: Omit<TransactWriteCommandInput, 'TransactItems'> = {},
): Promise<Array<{ readonly old: Item | undefined } | undefined> | undefined> {
  try {
    await askStore(what, () =>
      client.send(new TransactWriteCommand({ TransactItems: withOldOnFailure(items), ...options })),
    );
    return undefined;
  } catch (error) {
    const failed = failedConditions(error);
    if (!failed) throw error;
    return failed;
  }
}

export type TableStoreOptions = {
  readonly client: DynamoDBDocumentClient;
  readonly tableName: string;
  /** The time marks and records carry. @default the clock */
  readonly now?: () => string;
};

/** The one shape of every single-table store: built from `{ client, tableName }`. */
export abstract class TableStore {
  protected readonly client: DynamoDBDocumentClient;
  protected readonly tableName: string;
  protected readonly now: () => string;

  constructor(options: TableStoreOptions) {
    this.client = options.client;
    this.tableName = options.tableName;
    this.now = options.now ?? (() => new Date().toISOString());
  }
}
