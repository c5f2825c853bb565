import { BatchGetCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { AuditEntry } from '../../core/audit/record.ts';
import {
  AlreadyAssignedError,
  DuplicateRelationError,
  LimitReachedError,
  MeshRaceError,
  ModuleNotAssignedError,
  NodeExistsError,
  NodeNotFoundError,
  NotAProviderError,
  ProvisionNotMintedError,
  RelationNotFoundError,
} from '../../core/mesh/errors.ts';
import { meshLimits } from '../../core/mesh/limits.ts';
import type { Assignment, Relation } from '../../core/mesh/model.ts';
import type { RelationRef } from '../../core/mesh/removal.ts';
import type { Labels, MeshChangeStore, ModuleRecord } from '../../core/mesh/store.ts';
import { askStore } from '../../core/unavailable.ts';
import { AuditedTableStore } from '../audit/audit-trail.ts';
import {
  assignmentFrom,
  assignmentItem,
  assignmentKey,
  carrierItem,
  consumedByItem,
  grantKeyOf,
  markUpdates,
  moduleKey,
  nodeItem,
  nodeKey,
  provisionKeyOf,
  relationItem,
  relationKeyOf,
} from '../dynamodb/mesh-items.ts';
import { type Item, itemAbsent, itemPresent, type TransactItem } from '../dynamodb/requests.ts';
import { below, countRelation } from './relation-counts.ts';

// The named parts of every condition, so a refusal says which rule held it back.
const nodeExists = itemPresent;
const nodeIsNew = itemAbsent;
const notYetAssigned = itemAbsent;
const moduleUnrecorded = itemAbsent;
const versionUnset = 'attribute_not_exists(version)';
const versionIs = 'version = :version';
const providesUnset = 'attribute_not_exists(provides)';
const providesIs = 'provides = :provides';
const moduleAssigned = itemPresent;
const moduleIsProvider = `${itemPresent} AND attribute_exists(provides)`;
const relationIsNew = itemAbsent;
const provisionMinted = itemPresent;

const store = 'the inventory table';

/**
 * The operator's changes to the mesh, on the inventory table; item shapes are in mesh-items.ts.
 * Each change's transaction carries its audit record (audit-trail.ts).
 */
export class DynamoDBMeshChangeStore extends AuditedTableStore implements MeshChangeStore {
  async addNode(node: string, createdAt: string, labels: Labels, entry: AuditEntry): Promise<void> {
    // A new node has never been sent anything, so it is behind from the start.
    const failed = await this.#transact(entry, [
      {
        Put: {
          TableName: this.tableName,
          Item: nodeItem(node, createdAt, labels),
          ConditionExpression: nodeIsNew,
        },
      },
      ...markUpdates(this.tableName, node, this.now()),
    ]);
    if (failed?.[0]) throw new NodeExistsError(node);
    if (failed) throw new MeshRaceError('model');
  }

  async readModule(module: string): Promise<ModuleRecord | undefined> {
    const { Item } = await askStore(store, () =>
      this.client.send(
        new GetCommand({ TableName: this.tableName, Key: moduleKey(module), ConsistentRead: true }),
      ),
    );
    return Item ? { ...assignmentFrom(Item), module } : undefined;
  }

  async assign(
    node: string,
    assignment: Assignment,
    module: ModuleRecord | undefined,
    entry: AuditEntry,
  ): Promise<void> {
    const moduleWrite: TransactItem = module
      ? {
          ConditionCheck: {
            TableName: this.tableName,
            Key: moduleKey(assignment.module),
            ConditionExpression: `${module.version === null ? versionUnset : versionIs} AND ${
              module.provides === null ? providesUnset : providesIs
            }`,
            ...(module.version !== null || module.provides !== null
              ? {
                  ExpressionAttributeValues: {
                    ...(module.version !== null ? { ':version': module.version } : {}),
                    ...(module.provides !== null ? { ':provides': module.provides } : {}),
                  },
                }
              : {}),
          },
        }
      : {
          Put: {
            TableName: this.tableName,
            Item: {
              ...moduleKey(assignment.module),
              module: assignment.module,
              provides: assignment.provides ?? undefined,
            },
            ConditionExpression: moduleUnrecorded,
          },
        };
    const failed = await this.#transact(entry, [
      {
        Update: {
          TableName: this.tableName,
          Key: nodeKey(node),
          UpdateExpression: 'ADD modules :one',
          ConditionExpression: `${nodeExists} AND ${below('modules', ':max')}`,
          ExpressionAttributeValues: { ':one': 1, ':max': meshLimits.modulesPerNode },
        },
      },
      moduleWrite,
      {
        Put: {
          TableName: this.tableName,
          Item: assignmentItem(node, assignment),
          ConditionExpression: notYetAssigned,
        },
      },
      { Put: { TableName: this.tableName, Item: carrierItem(assignment.module, node, assignment.version) } },
      ...markUpdates(this.tableName, node, this.now()),
    ]);
    if (!failed) return;
    if (failed[2]) throw new AlreadyAssignedError(node, assignment.module);
    if (failed[0] && !failed[0].old) throw new NodeNotFoundError(node);
    if (failed[0])
      throw new LimitReachedError(node, 'modulesPerNode', meshLimits.modulesPerNode, 'modules assigned');
    throw new MeshRaceError('model');
  }

  async consume(node: string, relation: Omit<Relation, 'kind'>, entry: AuditEntry): Promise<void> {
    const consumerAssignment = assignmentKey(node, relation.consumerModule);
    const providerAssignment = assignmentKey(relation.providerNode, relation.providerModule);
    // A consumer and provider on the same node share its node item: BatchGetItem refuses a key twice.
    const keys = [
      ...new Map(
        [nodeKey(node), consumerAssignment, nodeKey(relation.providerNode), providerAssignment].map((key) => [
          `${key.pk}|${key.sk}`,
          key,
        ]),
      ).values(),
    ];
    const { Responses } = await askStore(store, () =>
      this.client.send(
        new BatchGetCommand({
          RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } },
        }),
      ),
    );
    const found = new Map((Responses?.[this.tableName] ?? []).map((item) => [`${item.pk}|${item.sk}`, item]));
    const get = (key: { pk: string; sk: string }) => found.get(`${key.pk}|${key.sk}`);
    if (!get(nodeKey(node))) throw new NodeNotFoundError(node);
    if (!get(consumerAssignment)) throw new ModuleNotAssignedError(node, relation.consumerModule);
    if (!get(nodeKey(relation.providerNode))) throw new NodeNotFoundError(relation.providerNode);
    const provider = get(providerAssignment);
    if (!provider) throw new ModuleNotAssignedError(relation.providerNode, relation.providerModule);
    const kind = assignmentFrom(provider).provides;
    if (!kind) throw new NotAProviderError(relation.providerNode, relation.providerModule);

    const counts = countRelation(this.tableName, node, relation.providerNode);
    const failed = await this.#transact(entry, [
      {
        ConditionCheck: {
          TableName: this.tableName,
          Key: consumerAssignment,
          ConditionExpression: moduleAssigned,
        },
      },
      {
        // Counted on the provider, so a removal of it fails if this consumer came in since its read.
        Update: {
          TableName: this.tableName,
          Key: providerAssignment,
          UpdateExpression: 'ADD consumedBy :one',
          ConditionExpression: moduleIsProvider,
          ExpressionAttributeValues: { ':one': 1 },
        },
      },
      {
        Put: {
          TableName: this.tableName,
          Item: relationItem(node, { ...relation, kind }),
          ConditionExpression: relationIsNew,
        },
      },
      { Put: { TableName: this.tableName, Item: consumedByItem({ consumerNode: node, ...relation }) } },
      ...counts,
      ...markUpdates(this.tableName, node, this.now()),
    ]);
    if (!failed) return;
    if (failed[0]) throw new ModuleNotAssignedError(node, relation.consumerModule);
    if (failed[1]) throw new NotAProviderError(relation.providerNode, relation.providerModule);
    if (failed[2]) {
      throw new DuplicateRelationError(
        `${node}/${relation.consumerModule}`,
        `${relation.providerNode}/${relation.providerModule}`,
      );
    }
    // the counts follow the four items above; on one node there is one count, for both
    const [consumerCount, providerCount = consumerCount] = failed.slice(4, 4 + counts.length);
    const past = (item: Item | undefined, count: string, max: number) => Number(item?.[count] ?? 0) >= max;
    if (consumerCount && past(consumerCount.old, 'consumes', meshLimits.consumesPerNode))
      throw new LimitReachedError(node, 'consumesPerNode', meshLimits.consumesPerNode, 'relations consumed');
    if (providerCount && past(providerCount.old, 'consumers', meshLimits.consumersPerNode))
      throw new LimitReachedError(
        relation.providerNode,
        'consumersPerNode',
        meshLimits.consumersPerNode,
        'consumers of its providers',
      );
    throw new MeshRaceError('model');
  }

  async rotateProvision(relation: RelationRef, rotatedAt: string, entry: AuditEntry): Promise<void> {
    const consumer = `${relation.consumerNode}/${relation.consumerModule}`;
    const provider = `${relation.providerNode}/${relation.providerModule}`;
    const relationKey = relationKeyOf(relation.consumerNode, relation);
    const { Responses } = await askStore(store, () =>
      this.client.send(
        new BatchGetCommand({
          RequestItems: {
            [this.tableName]: { Keys: [relationKey, provisionKeyOf(relation)], ConsistentRead: true },
          },
        }),
      ),
    );
    const found = new Set((Responses?.[this.tableName] ?? []).map((item) => String(item.sk)));
    if (!found.has(relationKey.sk)) throw new RelationNotFoundError(consumer, provider);
    if (!found.has(provisionKeyOf(relation).sk)) throw new ProvisionNotMintedError(consumer, provider);
    const rotate = (key: { pk: string; sk: string }): TransactItem => ({
      Update: {
        TableName: this.tableName,
        Key: key,
        UpdateExpression: 'SET rotationAsked = :asked, rotatedAt = :rotatedAt',
        ConditionExpression: provisionMinted,
        ExpressionAttributeValues: { ':asked': true, ':rotatedAt': rotatedAt },
      },
    });
    const nodes = [...new Set([relation.consumerNode, relation.providerNode])];
    const failed = await this.#transact(entry, [
      rotate(provisionKeyOf(relation)),
      rotate(grantKeyOf(relation)),
      ...nodes.flatMap((node) => markUpdates(this.tableName, node, rotatedAt)),
    ]);
    if (failed) throw new MeshRaceError('mint', failed.find(Boolean)?.old);
  }

  #transact(entry: AuditEntry, items: readonly TransactItem[]) {
    return this.audit.transact(store, items, entry);
  }
}
