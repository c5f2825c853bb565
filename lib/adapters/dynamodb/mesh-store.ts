import {
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  QueryCommand,
  type QueryCommandInput,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { isTransientFault } from '../../core/faults.ts';
import {
  AlreadyAssignedError,
  DuplicateRelationError,
  MeshRaceError,
  MeshStoreUnavailableError,
  ModuleNotAssignedError,
  ModuleNotFoundError,
  NodeExistsError,
  NodeNotFoundError,
  NotAProviderError,
} from '../../core/mesh/errors.ts';
import type { Assignment, NodeSnapshot, Provision, Relation } from '../../core/mesh/model.ts';
import type { MeshStore, ModuleRecord, NodeStatus, SendWrite } from '../../core/mesh/store.ts';
import { nodePartition } from './keys.ts';
import { deliveryItem } from './mesh-delivery-item.ts';
import {
  allNodesIndex,
  assignmentFrom,
  assignmentItem,
  assignmentKey,
  carriersIndex,
  grantItem,
  type Item,
  markedIndex,
  markKey,
  moduleKey,
  N,
  nodeItem,
  nodeKey,
  provisionFrom,
  provisionItem,
  relationFrom,
  relationItem,
  S,
} from './mesh-items.ts';

// The named parts of every condition, so a refusal says which rule held it back.
const itemAbsent = 'attribute_not_exists(pk)';
const itemPresent = 'attribute_exists(pk)';
const nodeExists = itemPresent;
const nodeIsNew = itemAbsent;
const notYetAssigned = itemAbsent;
const moduleUnrecorded = itemAbsent;
const moduleKnown = itemPresent;
const versionUnset = 'attribute_not_exists(version)';
const versionIs = 'version = :version';
const providesUnset = 'attribute_not_exists(provides)';
const providesIs = 'provides = :provides';
const moduleAssigned = itemPresent;
const moduleIsProvider = `${itemPresent} AND attribute_exists(provides)`;
const relationIsNew = itemAbsent;
const neverSent = itemAbsent;
const revisionIsNext = 'revision = :previous';
const provisionUnminted = itemAbsent;
const grantUnissued = itemAbsent;
const markUnchanged = 'marks = :seen';

const capacity = { ReturnConsumedCapacity: 'TOTAL' } as const;
const allOld = { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } as const;

/** The mesh store on the inventory table; item shapes and access patterns are in mesh-items.ts. */
export class DynamoDBMeshStore implements MeshStore {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #now: () => string;

  constructor(options: {
    readonly client: DynamoDBClient;
    readonly tableName: string;
    readonly now?: () => string;
  }) {
    this.#client = options.client;
    this.#table = options.tableName;
    this.#now = options.now ?? (() => new Date().toISOString());
  }

  async addNode(node: string, createdAt: string): Promise<void> {
    // A new node has never been sent anything, so it is behind from the start.
    const reasons = await this.#transact([
      { Put: { TableName: this.#table, Item: nodeItem(node, createdAt), ConditionExpression: nodeIsNew } },
      this.#mark(node),
    ]);
    if (reasons?.[0]) throw new NodeExistsError(node);
    if (reasons) throw new MeshRaceError('model');
  }

  async readModule(module: string): Promise<ModuleRecord | undefined> {
    const { Items } = await this.#call(() =>
      this.#client.send(
        new QueryCommand({
          TableName: this.#table,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': S(`module#${module}`) },
          ConsistentRead: true,
          ...capacity,
        }),
      ),
    );
    const item = Items?.[0];
    return item
      ? { module, version: item.version?.S ?? null, provides: item.provides?.S ?? null }
      : undefined;
  }

  async assign(node: string, assignment: Assignment, module: ModuleRecord | undefined): Promise<void> {
    const moduleWrite: TransactWriteItem = module
      ? {
          ConditionCheck: {
            TableName: this.#table,
            Key: moduleKey(assignment.module),
            ConditionExpression: `${module.version === null ? versionUnset : versionIs} AND ${
              module.provides === null ? providesUnset : providesIs
            }`,
            ...(module.version !== null || module.provides !== null
              ? {
                  ExpressionAttributeValues: {
                    ...(module.version !== null ? { ':version': S(module.version) } : {}),
                    ...(module.provides !== null ? { ':provides': S(module.provides) } : {}),
                  },
                }
              : {}),
          },
        }
      : {
          Put: {
            TableName: this.#table,
            Item: {
              ...moduleKey(assignment.module),
              module: S(assignment.module),
              ...(assignment.provides !== null ? { provides: S(assignment.provides) } : {}),
            },
            ConditionExpression: moduleUnrecorded,
          },
        };
    const reasons = await this.#transact([
      { ConditionCheck: { TableName: this.#table, Key: nodeKey(node), ConditionExpression: nodeExists } },
      moduleWrite,
      {
        Put: {
          TableName: this.#table,
          Item: assignmentItem(node, assignment),
          ConditionExpression: notYetAssigned,
        },
      },
      this.#mark(node),
    ]);
    if (!reasons) return;
    if (reasons[0]) throw new NodeNotFoundError(node);
    if (reasons[2]) throw new AlreadyAssignedError(node, assignment.module);
    throw new MeshRaceError('model');
  }

  async consume(node: string, relation: Omit<Relation, 'kind'>): Promise<void> {
    const consumerAssignment = assignmentKey(node, relation.consumerModule);
    const providerAssignment = assignmentKey(relation.providerNode, relation.providerModule);
    const keys = [nodeKey(node), consumerAssignment, nodeKey(relation.providerNode), providerAssignment];
    const { Responses } = await this.#call(() =>
      this.#client.send(
        new BatchGetItemCommand({
          RequestItems: { [this.#table]: { Keys: keys, ConsistentRead: true } },
          ...capacity,
        }),
      ),
    );
    const found = new Set((Responses?.[this.#table] ?? []).map((item) => `${item.pk?.S}|${item.sk?.S}`));
    const has = (key: Item) => found.has(`${key.pk?.S}|${key.sk?.S}`);
    const provider = (Responses?.[this.#table] ?? []).find(
      (item) => item.pk?.S === providerAssignment.pk?.S && item.sk?.S === providerAssignment.sk?.S,
    );
    if (!has(nodeKey(node))) throw new NodeNotFoundError(node);
    if (!has(consumerAssignment)) throw new ModuleNotAssignedError(node, relation.consumerModule);
    if (!has(nodeKey(relation.providerNode))) throw new NodeNotFoundError(relation.providerNode);
    if (!provider) throw new ModuleNotAssignedError(relation.providerNode, relation.providerModule);
    const kind = provider.provides?.S;
    if (!kind) throw new NotAProviderError(relation.providerNode, relation.providerModule);

    const full: Relation = { ...relation, kind };
    const reasons = await this.#transact([
      {
        ConditionCheck: {
          TableName: this.#table,
          Key: consumerAssignment,
          ConditionExpression: moduleAssigned,
        },
      },
      {
        ConditionCheck: {
          TableName: this.#table,
          Key: providerAssignment,
          ConditionExpression: moduleIsProvider,
        },
      },
      { Put: { TableName: this.#table, Item: relationItem(node, full), ConditionExpression: relationIsNew } },
      this.#mark(node),
    ]);
    if (!reasons) return;
    if (reasons[0]) throw new ModuleNotAssignedError(node, relation.consumerModule);
    if (reasons[1]) throw new NotAProviderError(relation.providerNode, relation.providerModule);
    if (reasons[2]) {
      throw new DuplicateRelationError(
        `${node}/${relation.consumerModule}`,
        `${relation.providerNode}/${relation.providerModule}`,
      );
    }
    throw new MeshRaceError('model');
  }

  async setModuleVersion(module: string, version: string): Promise<{ readonly carriers: readonly string[] }> {
    try {
      await this.#call(() =>
        this.#client.send(
          new UpdateItemCommand({
            TableName: this.#table,
            Key: moduleKey(module),
            UpdateExpression: 'SET version = :version',
            // An unknown module is refused, not invented: a record with no kind would block its
            // first `assign --provides` for good.
            ConditionExpression: moduleKnown,
            ExpressionAttributeValues: { ':version': S(version) },
            ...allOld,
            ...capacity,
          }),
        ),
      );
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException)
        throw new ModuleNotFoundError(module, { cause: error });
      throw error;
    }
    const carriers = await this.#queryIndex(carriersIndex(module));
    for (const carrier of carriers) {
      if (carrier.version?.S === version) continue;
      const node = carrier.gsi1sk?.S ?? '';
      // A newer upgrade that already moved the module on leaves this one's carriers alone.
      await this.#transact([
        {
          ConditionCheck: {
            TableName: this.#table,
            Key: moduleKey(module),
            ConditionExpression: versionIs,
            ExpressionAttributeValues: { ':version': S(version) },
          },
        },
        {
          Update: {
            TableName: this.#table,
            Key: assignmentKey(node, module),
            UpdateExpression: 'SET version = :version',
            ConditionExpression: moduleAssigned,
            ExpressionAttributeValues: { ':version': S(version) },
          },
        },
        this.#mark(node),
      ]);
    }
    return { carriers: carriers.map((item) => item.gsi1sk?.S ?? '') };
  }

  async readNode(node: string): Promise<NodeSnapshot | undefined> {
    const items = await this.#partition(node);
    if (!items.some((item) => item.sk?.S === 'node')) return undefined;
    const assignments = [];
    const relations = [];
    const provisions: Provision[] = [];
    const grants: Provision[] = [];
    let sent: NodeSnapshot['sent'];
    let mark: number | undefined;
    for (const item of items) {
      const sk = item.sk?.S ?? '';
      if (sk.startsWith('module#')) assignments.push(assignmentFrom(item));
      else if (sk.startsWith('consumes#')) relations.push(relationFrom(item));
      else if (sk.startsWith('provision#')) provisions.push(provisionFrom(item));
      else if (sk.startsWith('grant#')) grants.push(provisionFrom(item));
      else if (sk === 'delivery') {
        sent = {
          revision: Number(item.revision?.N ?? '0'),
          digest: item.digest?.S ?? '',
          sentAt: item.sentAt?.S ?? '',
        };
      } else if (sk === 'mark') mark = Number(item.marks?.N ?? '0');
    }
    return { node, assignments, relations, provisions, grants, sent, mark };
  }

  async send(write: SendWrite): Promise<void> {
    const items: TransactWriteItem[] = [
      {
        Put: {
          TableName: this.#table,
          Item: deliveryItem(write),
          ConditionExpression: write.previousRevision === undefined ? neverSent : revisionIsNext,
          ...(write.previousRevision !== undefined
            ? { ExpressionAttributeValues: { ':previous': N(write.previousRevision) } }
            : {}),
        },
      },
    ];
    for (const mint of write.mints) {
      items.push(
        {
          Put: { TableName: this.#table, Item: provisionItem(mint), ConditionExpression: provisionUnminted },
        },
        { Put: { TableName: this.#table, Item: grantItem(mint), ConditionExpression: grantUnissued } },
      );
    }
    const providers = new Set(write.mints.map((mint) => mint.providerNode).filter((n) => n !== write.node));
    for (const provider of providers) items.push(this.#mark(provider));
    if (write.mark !== undefined) {
      items.push({
        Delete: {
          TableName: this.#table,
          Key: markKey(write.node),
          ConditionExpression: markUnchanged,
          ExpressionAttributeValues: { ':seen': N(write.mark) },
        },
      });
    }
    const reasons = await this.#transact(items);
    if (!reasons) return;
    const lost = reasons.findIndex(Boolean);
    const race =
      lost === 0 ? 'revision' : lost === items.length - 1 && write.mark !== undefined ? 'mark' : 'mint';
    throw new MeshRaceError(race, reasons[lost]?.old);
  }

  async clearMark(node: string, mark: number): Promise<void> {
    try {
      await this.#call(() =>
        this.#client.send(
          new DeleteItemCommand({
            TableName: this.#table,
            Key: markKey(node),
            ConditionExpression: markUnchanged,
            ExpressionAttributeValues: { ':seen': N(mark) },
            ...allOld,
            ...capacity,
          }),
        ),
      );
    } catch (error) {
      // A newer mark came in since the read: it stays, and the next round looks again.
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
    }
  }

  async listMarked(): Promise<string[]> {
    return (await this.#queryIndex(markedIndex)).map((item) => item.gsi1sk?.S ?? '');
  }

  async listNodes(): Promise<string[]> {
    return (await this.#queryIndex(allNodesIndex)).map((item) => item.gsi1sk?.S ?? '');
  }

  async readStatus(node: string): Promise<NodeStatus | undefined> {
    const items = await this.#partition(node);
    const bySk = new Map(items.map((item) => [item.sk?.S ?? '', item]));
    if (!bySk.has('node')) return undefined;
    const delivery = bySk.get('delivery');
    const enrolment = bySk.get('enrolment');
    const report = bySk.get('report');
    const reportedRevision = report?.revision?.N !== undefined ? Number(report.revision.N) : null;
    const reportedApplied = report?.state?.S === 'applied';
    return {
      node,
      enrolled: enrolment !== undefined,
      enrolledAt: enrolment?.enrolledAt?.S ?? null,
      sentRevision: delivery?.revision?.N !== undefined ? Number(delivery.revision.N) : null,
      sentAt: delivery?.sentAt?.S ?? null,
      // The report keeps the last applied revision apart from its state, so a newer revision
      // applying or failed does not hide what the host runs; older reports only had `revision`.
      appliedRevision:
        report?.appliedRevision?.N !== undefined
          ? Number(report.appliedRevision.N)
          : reportedApplied
            ? reportedRevision
            : null,
      appliedAt: report?.appliedAt?.S ?? (reportedApplied ? (report?.heardAt?.S ?? null) : null),
      reportState: report?.state?.S ?? null,
      behind: bySk.has('mark'),
      lastHeard: report?.heardAt?.S ?? null,
    };
  }

  /** The stale mark: a counter, so a send clears only the mark it answered. */
  #mark(node: string): TransactWriteItem {
    return {
      Update: {
        TableName: this.#table,
        Key: markKey(node),
        UpdateExpression:
          'ADD marks :one SET #node = :node, markedAt = :now, gsi1pk = :index, gsi1sk = :node',
        ExpressionAttributeNames: { '#node': 'node' },
        ExpressionAttributeValues: {
          ':one': N(1),
          ':node': S(node),
          ':now': S(this.#now()),
          ':index': S(markedIndex),
        },
      },
    };
  }

  async #partition(node: string): Promise<Item[]> {
    return this.#queryAll({
      TableName: this.#table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': S(nodePartition(node)) },
      ConsistentRead: true,
    });
  }

  #queryIndex(index: string): Promise<Item[]> {
    return this.#queryAll({
      TableName: this.#table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :index',
      ExpressionAttributeValues: { ':index': S(index) },
    });
  }

  async #queryAll(input: QueryCommandInput): Promise<Item[]> {
    const items: Item[] = [];
    let start: Item | undefined;
    do {
      const page = await this.#call(() =>
        this.#client.send(
          new QueryCommand({ ...input, ...capacity, ...(start ? { ExclusiveStartKey: start } : {}) }),
        ),
      );
      items.push(...(page.Items ?? []));
      start = page.LastEvaluatedKey;
    } while (start);
    return items;
  }

  /**
   * Runs a transaction; undefined when it held, else per item whether its condition failed
   * (with the old item). Only condition failures and conflicts are ours to name.
   */
  async #transact(
    items: TransactWriteItem[],
  ): Promise<Array<{ old: Item | undefined } | undefined> | undefined> {
    const withOld = items.map((item) => {
      const [kind, body] = Object.entries(item)[0] as [string, object];
      return { [kind]: { ...body, ...allOld } } as TransactWriteItem;
    });
    try {
      await this.#call(() =>
        this.#client.send(new TransactWriteItemsCommand({ TransactItems: withOld, ...capacity })),
      );
      return undefined;
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const reasons = error.CancellationReasons ?? [];
      if (reasons.some((reason) => reason.Code === 'TransactionConflict')) {
        throw new MeshRaceError('model', undefined, { cause: error });
      }
      if (!reasons.some((reason) => reason.Code === 'ConditionalCheckFailed')) throw error;
      return items.map((_, index) =>
        reasons[index]?.Code === 'ConditionalCheckFailed' ? { old: reasons[index]?.Item } : undefined,
      );
    }
  }

  async #call<Output>(request: () => Promise<Output>): Promise<Output> {
    try {
      return await request();
    } catch (error) {
      if (isTransientFault(error))
        throw new MeshStoreUnavailableError('the inventory table could not be reached', { cause: error });
      throw error;
    }
  }
}
