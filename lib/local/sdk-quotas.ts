import {
  ProvisionedThroughputExceededException,
  TransactionCanceledException,
  TransactionConflictException,
} from '@aws-sdk/client-dynamodb';
import { BatchRequestTooLong, SQSServiceException } from '@aws-sdk/client-sqs';
import { inventoryTable } from '../server/setup/resources.ts';
import { awsQuotas } from './aws-quotas.ts';

/**
 * The quotas of DynamoDB and SQS that the emulators do not hold themselves, checked on every SDK
 * request each of the local runtime's clients sends (docs/local-and-aws.md, "AWS's quotas,
 * enforced here"). DynamoDB Local refuses an item over 400 KB, a transaction of more than 100
 * items or over 4 MB and a BatchWriteItem of more than 25 with AWS's own errors, so those are
 * left to it; fauxqs holds no message size and no throughput. What is held here:
 * - SQS: a message (body and attributes) or a batch over the queue's 256 KiB; on a FIFO queue,
 *   300 calls a second for each action (the stack sets no high-throughput mode: lib/deploy/control-queue.ts);
 * - DynamoDB: two transactions on one item at once, a write to an item a transaction holds, and
 *   a TransactGetItems of an item being written, each failed as AWS fails it (TransactionConflict);
 * - DynamoDB, when MESH_PARTITION_THROUGHPUT is `on`: 1,000 write and 3,000 read units a second
 *   on one partition key.
 * The middleware sits inside the SDK's retries, as AWS's answers do: a throttled call is retried
 * with the SDK's backoff, and fails only when its attempts run out.
 */
export function enforcingQuotas<C>(client: C): C {
  const stack = (client as { middlewareStack?: MiddlewareStack }).middlewareStack;
  if (!stack) return client;
  stack.add((next) => (args) => held(next, args), {
    step: 'finalizeRequest',
    priority: 'low',
    name: 'meshAwsQuotas',
    override: true,
  });
  return client;
}

type Args = { readonly request: unknown };
type Handler = (args: Args) => Promise<{ readonly response: unknown }>;
type MiddlewareStack = { add(middleware: (next: Handler) => Handler, options: object): void };
type Request = { readonly headers?: Record<string, string>; readonly body?: unknown };

/** Whether the opt-in model of one partition's throughput is on (benches). */
const partitionModel = () => process.env.MESH_PARTITION_THROUGHPUT === 'on';

async function held(next: Handler, args: Args) {
  const request = args.request as Request;
  const target = request.headers?.['x-amz-target'] ?? '';
  const dot = target.indexOf('.');
  const service = target.slice(0, dot);
  const action = target.slice(dot + 1);
  if (service === 'AmazonSQS') return sqsHeld(next, args, action, bodyOf(request));
  if (service.startsWith('DynamoDB_')) return dynamodbHeld(next, args, action, bodyOf(request));
  return next(args);
}

function bodyOf(request: Request): string {
  const body = request.body;
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array)
    return Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString();
  return '';
}

const parsed = (body: string): Record<string, unknown> => (body ? JSON.parse(body) : {});

// --- SQS ------------------------------------------------------------------------------------

type SqsAttribute = {
  readonly DataType?: string;
  readonly StringValue?: string;
  readonly BinaryValue?: string;
};
type SqsEntry = { readonly MessageBody?: string; readonly MessageAttributes?: Record<string, SqsAttribute> };

/** A message's size as SQS counts it: the body, and each attribute's name, type and value. */
function messageBytes(entry: SqsEntry): number {
  let bytes = Buffer.byteLength(entry.MessageBody ?? '', 'utf8');
  for (const [name, value] of Object.entries(entry.MessageAttributes ?? {}))
    bytes +=
      Buffer.byteLength(name, 'utf8') +
      Buffer.byteLength(value.DataType ?? '', 'utf8') +
      (value.BinaryValue !== undefined
        ? Buffer.from(value.BinaryValue, 'base64').length
        : Buffer.byteLength(value.StringValue ?? '', 'utf8'));
  return bytes;
}

const sqsError = (name: string, message: string, throttling = false) => {
  const error = new SQSServiceException({
    name,
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    message,
  });
  if (throttling) Object.assign(error, { $retryable: { throttling: true } });
  return error;
};

/** Calls in the current second, by queue and action. */
const sqsCalls = new Map<string, { second: number; calls: number }>();

async function sqsHeld(next: Handler, args: Args, action: string, body: string) {
  const input = parsed(body) as { QueueUrl?: string; Entries?: SqsEntry[] } & SqsEntry;
  const limit = awsQuotas.sqsMessageBytes;
  if (action === 'SendMessage') {
    const bytes = messageBytes(input);
    if (bytes > limit)
      throw sqsError(
        'InvalidParameterValue',
        `One or more parameters are invalid. Reason: Message must be shorter than ${limit} bytes. (${bytes} bytes)`,
      );
  }
  if (action === 'SendMessageBatch') {
    const bytes = (input.Entries ?? []).reduce((sum, entry) => sum + messageBytes(entry), 0);
    if (bytes > limit)
      throw new BatchRequestTooLong({
        $metadata: { httpStatusCode: 400 },
        message: `Batch requests cannot be longer than ${limit} bytes. You have sent ${bytes} bytes.`,
      });
  }
  if (input.QueueUrl?.endsWith('.fifo')) {
    const key = `${input.QueueUrl} ${action}`;
    const second = Math.floor(Date.now() / 1000);
    const window = sqsCalls.get(key);
    const now = window && window.second === second ? window : { second, calls: 0 };
    now.calls += 1;
    sqsCalls.set(key, now);
    if (now.calls > awsQuotas.fifoCallsPerSecond)
      throw sqsError(
        'ThrottlingException',
        `Rate exceeded: ${action} on a FIFO queue without high throughput takes ${awsQuotas.fifoCallsPerSecond} calls a second`,
        true,
      );
  }
  return next(args);
}

// --- DynamoDB -------------------------------------------------------------------------------

type AttributeMap = Record<string, unknown>;
type TransactWrite = {
  readonly Put?: { readonly TableName: string; readonly Item: AttributeMap };
  readonly Update?: { readonly TableName: string; readonly Key: AttributeMap };
  readonly Delete?: { readonly TableName: string; readonly Key: AttributeMap };
  readonly ConditionCheck?: { readonly TableName: string; readonly Key: AttributeMap };
};

const keyNames = [inventoryTable.partitionKey.name, inventoryTable.sortKey?.name].filter(
  (name): name is string => name !== undefined,
);

/** One item's identity: its table and its key (every Mesh table keys by `pk`, `sk`). */
function itemKey(table: string, item: AttributeMap): string {
  return `${table}\u0000${keyNames.map((name) => JSON.stringify(item[name] ?? null)).join('\u0000')}`;
}

/** The partition of an item, for the throughput model. */
const partitionOf = (table: string, item: AttributeMap) =>
  `${table}\u0000${JSON.stringify(item[keyNames[0] as string] ?? null)}`;

/**
 * How often this process answered as AWS would refuse: `TransactionConflict` (a transaction
 * cancelled by one, or a single write into an item a transaction holds). Benches and tests read it.
 */
export const quotaAnswers = { conflicts: 0 };

/** Items a transaction holds, and items a single write is writing, at this moment. */
const inTransaction = new Map<string, number>();
const beingWritten = new Map<string, number>();

const hold = (held: Map<string, number>, keys: readonly string[]) => {
  for (const key of keys) held.set(key, (held.get(key) ?? 0) + 1);
  return () => {
    for (const key of keys) {
      const left = (held.get(key) ?? 1) - 1;
      if (left > 0) held.set(key, left);
      else held.delete(key);
    }
  };
};

const cancellationMessage = (codes: readonly string[]) =>
  `Transaction cancelled, please refer cancellation reasons for specific reasons [${codes.join(', ')}]`;

function transactWriteKey(
  entry: TransactWrite,
): { key: string; partition: string; bytes: number } | undefined {
  const action = entry.Put ?? entry.Update ?? entry.Delete ?? entry.ConditionCheck;
  if (!action) return undefined;
  const item = entry.Put ? entry.Put.Item : (action as { Key: AttributeMap }).Key;
  return {
    key: itemKey(action.TableName, item),
    partition: partitionOf(action.TableName, item),
    bytes: Buffer.byteLength(JSON.stringify(entry), 'utf8'),
  };
}

async function dynamodbHeld(next: Handler, args: Args, action: string, body: string) {
  switch (action) {
    case 'TransactWriteItems': {
      const entries = ((parsed(body).TransactItems ?? []) as TransactWrite[]).map(transactWriteKey);
      const keys = entries.flatMap((entry) => (entry ? [entry.key] : []));
      const codes = keys.map((key) =>
        inTransaction.has(key) || beingWritten.has(key) ? 'TransactionConflict' : 'None',
      );
      if (codes.includes('TransactionConflict')) {
        quotaAnswers.conflicts += 1;
        throw new TransactionCanceledException({
          $metadata: { httpStatusCode: 400 },
          message: cancellationMessage(codes),
          CancellationReasons: codes.map((Code) =>
            Code === 'None' ? { Code } : { Code, Message: 'Transaction is ongoing for the item' },
          ),
        });
      }
      // a transaction's writes cost two units each
      spendWrites(
        entries.flatMap((entry) => (entry ? [[entry.partition, 2 * units(entry.bytes, 1024)] as const] : [])),
      );
      const release = hold(inTransaction, keys);
      try {
        return await next(args);
      } finally {
        release();
      }
    }
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem': {
      const input = parsed(body) as { TableName: string; Item?: AttributeMap; Key?: AttributeMap };
      const item = input.Item ?? input.Key ?? {};
      const key = itemKey(input.TableName, item);
      if (inTransaction.has(key)) {
        quotaAnswers.conflicts += 1;
        throw new TransactionConflictException({
          $metadata: { httpStatusCode: 400 },
          message: 'Transaction is ongoing for the item',
        });
      }
      spendWrites([[partitionOf(input.TableName, item), units(Buffer.byteLength(body, 'utf8'), 1024)]]);
      const release = hold(beingWritten, [key]);
      try {
        return await next(args);
      } finally {
        release();
      }
    }
    case 'BatchWriteItem': {
      const requests = parsed(body).RequestItems as Record<
        string,
        { PutRequest?: { Item: AttributeMap }; DeleteRequest?: { Key: AttributeMap } }[]
      >;
      const items = Object.entries(requests ?? {}).flatMap(([table, writes]) =>
        writes.map((write) => ({
          table,
          item: write.PutRequest?.Item ?? write.DeleteRequest?.Key ?? {},
          write,
        })),
      );
      spendWrites(
        items.map(({ table, item, write }) => [
          partitionOf(table, item),
          units(Buffer.byteLength(JSON.stringify(write), 'utf8'), 1024),
        ]),
      );
      const release = hold(
        beingWritten,
        items.map(({ table, item }) => itemKey(table, item)),
      );
      try {
        return await next(args);
      } finally {
        release();
      }
    }
    case 'TransactGetItems': {
      const gets = (parsed(body).TransactItems ?? []) as { Get: { TableName: string; Key: AttributeMap } }[];
      const codes = gets.map(({ Get }) => {
        const key = itemKey(Get.TableName, Get.Key);
        return inTransaction.has(key) || beingWritten.has(key) ? 'TransactionConflict' : 'None';
      });
      if (codes.includes('TransactionConflict'))
        throw new TransactionCanceledException({
          $metadata: { httpStatusCode: 400 },
          message: cancellationMessage(codes),
          CancellationReasons: codes.map((Code) =>
            Code === 'None' ? { Code } : { Code, Message: 'Transaction is ongoing for the item' },
          ),
        });
      return readsHeld(
        next,
        args,
        gets.map(({ Get }) => partitionOf(Get.TableName, Get.Key)),
      );
    }
    case 'GetItem':
    case 'Query': {
      if (!partitionModel()) return next(args);
      const input = parsed(body) as {
        TableName: string;
        Key?: AttributeMap;
        ExpressionAttributeValues?: AttributeMap;
      };
      // a Query's partition is the first value its key condition names
      const value =
        input.Key?.[keyNames[0] as string] ?? Object.values(input.ExpressionAttributeValues ?? {})[0];
      return readsHeld(next, args, [`${input.TableName}\u0000${JSON.stringify(value ?? null)}`]);
    }
    default:
      return next(args);
  }
}

// --- one partition's throughput (opt-in) ----------------------------------------------------

const units = (bytes: number, unit: number) => Math.max(1, Math.ceil(bytes / unit));

/** Units spent in the current second, by partition. */
const spent = {
  writes: new Map<string, { second: number; units: number }>(),
  reads: new Map<string, { second: number; units: number }>(),
};

function spend(kind: 'writes' | 'reads', partition: string, cost: number): number {
  const second = Math.floor(Date.now() / 1000);
  const window = spent[kind].get(partition);
  const now = window && window.second === second ? window : { second, units: 0 };
  now.units += cost;
  spent[kind].set(partition, now);
  return now.units;
}

const throughputExceeded = (partition: string, kind: string) =>
  new ProvisionedThroughputExceededException({
    $metadata: { httpStatusCode: 400 },
    message: `The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API. (one partition's ${kind} a second: ${partition.split('\u0000')[1]})`,
  });

function spendWrites(costs: readonly (readonly [string, number])[]): void {
  if (!partitionModel()) return;
  for (const [partition, cost] of costs)
    if (spend('writes', partition, cost) > awsQuotas.partitionWritesPerSecond)
      throw throughputExceeded(partition, `${awsQuotas.partitionWritesPerSecond} write units`);
}

/** A read is refused while its partition's second is spent; what it reads is counted after (4 KB a unit). */
async function readsHeld(next: Handler, args: Args, partitions: readonly string[]) {
  if (!partitionModel()) return next(args);
  for (const partition of partitions)
    if (spend('reads', partition, 0) >= awsQuotas.partitionReadsPerSecond)
      throw throughputExceeded(partition, `${awsQuotas.partitionReadsPerSecond} read units`);
  const answer = await next(args);
  const length = Number(
    (answer.response as { headers?: Record<string, string> }).headers?.['content-length'] ?? 0,
  );
  const share = units(length, 4096) / Math.max(1, partitions.length);
  for (const partition of partitions) spend('reads', partition, share);
  return answer;
}
