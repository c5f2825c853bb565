/**
 * The one description of Mesh's stateful resources. The local runtime creates them from this,
 * the CDK constructs build them from this, and a test holds the synthesized template to it,
 * so local and deployed cannot drift.
 */

export type KeyAttribute = { readonly name: string; readonly type: 'S' | 'N' };

export type IndexDescription = {
  readonly indexName: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  /** What the index copies of each item: every attribute, or its keys alone. @default 'ALL' */
  readonly projection?: 'ALL' | 'KEYS_ONLY';
};

export type TableDescription = {
  readonly logicalName: 'inventory' | 'identity';
  /** What the table holds, kept next to its keys so the access patterns are read in one place. */
  readonly purpose: string;
  readonly partitionKey: KeyAttribute;
  readonly sortKey?: KeyAttribute;
  readonly globalSecondaryIndexes: readonly IndexDescription[];
  readonly timeToLiveAttribute?: string;
  /**
   * The table's stream, with both images of each change: what the summary's aggregator reads
   * (docs/decisions/summary-from-the-stream.md).
   */
  readonly stream?: 'NEW_AND_OLD_IMAGES';
};

export type QueueDescription = {
  readonly logicalName: 'control' | 'deadLetter';
  readonly purpose: string;
  readonly fifo: true;
  readonly contentBasedDeduplication: boolean;
  readonly visibilityTimeoutSeconds: number;
  readonly messageRetentionSeconds: number;
  /**
   * The largest message, body and attributes together. Held at SQS's classic 256 KiB rather than
   * the 1 MiB new queues allow, so a dead-letter copy cut to fit (lib/adapters/sqs) always fits.
   */
  readonly maximumMessageBytes: number;
  /**
   * High-throughput FIFO (docs/control-queue.md, "Throughput"): throughput and deduplication kept
   * per message group (each subject) rather than per queue, so the queue takes thousands of
   * calls a second instead of 300 an action.
   */
  readonly highThroughput: boolean;
  /** The queue whose let-go and malformed messages land here, with the receive count that is a last resort. */
  readonly deadLetter?: { readonly queue: 'deadLetter'; readonly maxReceiveCount: number };
};

/** The consumer's Lambda timeout; the control queue's visibility is kept at six times this. */
export const consumerTimeoutSeconds = 30;

export const inventoryTable: TableDescription = {
  logicalName: 'inventory',
  purpose: 'mesh (nodes, modules, assignments, relations, provisions), tokens, builds, sent, reports',
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [
    {
      indexName: 'gsi1',
      partitionKey: { name: 'gsi1pk', type: 'S' },
      sortKey: { name: 'gsi1sk', type: 'S' },
    },
    {
      // Sparse: only a failed report or an offline presence carries these keys, so each list
      // holds just those nodes and is written only when a node turns failed or offline or back
      // (lib/server/adapters/views/view-lists.ts). Keys only, so a heartbeat of a failed node, which
      // changes no key, writes nothing here.
      indexName: 'gsi2',
      partitionKey: { name: 'gsi2pk', type: 'S' },
      sortKey: { name: 'gsi2sk', type: 'S' },
      projection: 'KEYS_ONLY',
    },
  ],
  timeToLiveAttribute: 'expiresAt',
  stream: 'NEW_AND_OLD_IMAGES',
};

export const identityTable: TableDescription = {
  logicalName: 'identity',
  purpose: "node keys: each enrolled node's public signing key and its other keys",
  partitionKey: { name: 'pk', type: 'S' },
  sortKey: { name: 'sk', type: 'S' },
  globalSecondaryIndexes: [],
};

export const deadLetterQueue: QueueDescription = {
  logicalName: 'deadLetter',
  purpose: 'what the consumer let go (lost) and what was malformed, each with its reason',
  fifo: true,
  contentBasedDeduplication: true,
  visibilityTimeoutSeconds: 30,
  messageRetentionSeconds: 14 * 24 * 3600,
  maximumMessageBytes: 256 * 1024,
  // what lands here is a trickle: the queue's own 300 calls a second an action are plenty
  highThroughput: false,
};

export const controlQueue: QueueDescription = {
  logicalName: 'control',
  purpose: 'reports, build results, upgrades and catch-up requests; MessageGroupId is the subject',
  fifo: true,
  contentBasedDeduplication: true,
  visibilityTimeoutSeconds: 6 * consumerTimeoutSeconds,
  messageRetentionSeconds: 4 * 24 * 3600,
  maximumMessageBytes: 256 * 1024,
  // 50,000 hosts reporting after a push, each report a message of its own subject
  highThroughput: true,
  // The consumer itself moves a message to the dead-letter queue after two minutes held; this
  // count only catches a consumer that keeps crashing on one message.
  deadLetter: { queue: 'deadLetter', maxReceiveCount: 50 },
};

export const tables = [inventoryTable, identityTable] as const;
export const queues = [deadLetterQueue, controlQueue] as const;

/** Physical names used by the local runtime; a prefix keeps test runs apart. */
export function localResourceNames(prefix = 'mesh') {
  return {
    inventoryTable: `${prefix}-inventory`,
    identityTable: `${prefix}-identity`,
    controlQueue: `${prefix}-control.fifo`,
    deadLetterQueue: `${prefix}-control-dead.fifo`,
  } as const;
}

export type ResourceNames = ReturnType<typeof localResourceNames>;
