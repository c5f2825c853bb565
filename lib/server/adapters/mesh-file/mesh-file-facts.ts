import {
  DuplicateRelationError,
  LimitReachedError,
  MeshRaceError,
  NodeExistsError,
  NotAProviderError,
} from '../../core/mesh/errors.ts';
import { meshLimits } from '../../core/mesh/limits.ts';
import type { ModuleChange, RelationChange } from '../../core/mesh-file/plan.ts';
import type { LiveModule } from '../../core/mesh-file/ports.ts';
import {
  assignmentItem,
  assignmentKey,
  carrierItem,
  consumedByItem,
  moduleKey,
  nodeKey,
  relationItem,
} from '../dynamodb/mesh-items.ts';
import { itemPresent, type TransactItem } from '../dynamodb/requests.ts';
import type { Keyed } from './mesh-file-batch.ts';

/**
 * The facts of an apply, each the items today's single write makes (mesh-change-store.ts), with
 * its conditions: an assignment on its module's record as read, a relation on its provider's
 * assignment being a provider, every count held to its limit.
 */

/** A write's key, for the batch: every TransactItem here names one item. */
const keyOf = (write: TransactItem): { pk: string; sk: string } => {
  const body = (write.Put?.Item ?? write.Update?.Key ?? write.Delete?.Key ?? write.ConditionCheck?.Key) as {
    pk: string;
    sk: string;
  };
  return { pk: body.pk, sk: body.sk };
};
export const raw = (write: TransactItem): Keyed => ({ key: keyOf(write), op: { op: 'raw', write } });

/** The module's record unchanged since it was read (or first written by this apply), as `assign` holds it. */
export function moduleUnchanged(record: LiveModule): Keyed['op'] {
  const version = record.version === null ? 'attribute_not_exists(version)' : 'version = :version';
  const provides = record.provides === null ? 'attribute_not_exists(provides)' : 'provides = :provides';
  const values = {
    ...(record.version !== null ? { ':version': record.version } : {}),
    ...(record.provides !== null ? { ':provides': record.provides } : {}),
  };
  return {
    op: 'check',
    condition: `attribute_exists(pk) AND ${version} AND ${provides}`,
    ...(Object.keys(values).length > 0 ? { values } : {}),
  };
}

/** What `assign` writes beside the node's count: the assignment and its carrier, on the module's record. */
export function assignmentFacts(tableName: string, change: ModuleChange, record: LiveModule): Keyed[] {
  const assignment = { module: change.module, version: record.version, provides: record.provides };
  return [
    { key: moduleKey(change.module), op: moduleUnchanged(record) },
    {
      key: assignmentKey(change.node, change.module),
      op: { op: 'put', item: assignmentItem(change.node, assignment), condition: 'attribute_not_exists(pk)' },
    },
    raw({ Put: { TableName: tableName, Item: carrierItem(change.module, change.node, assignment.version) } }),
  ];
}

/**
 * What `consume` writes for one relation beyond the consumer's count and marks: the relation,
 * its provider's `consumedBy` record and count (a provider's assignment only), the provider
 * node's consumers held to their limit. `consumerPresent` adds the consumer's assignment check,
 * left out when the same fact puts the assignment.
 */
export function relationCore(tableName: string, relation: RelationChange, consumerPresent: boolean): Keyed[] {
  const { consumerNode, consumerModule, providerNode, providerModule, kind } = relation;
  return [
    ...(consumerPresent
      ? [
          {
            key: assignmentKey(consumerNode, consumerModule),
            op: { op: 'check', condition: itemPresent },
          } as Keyed,
        ]
      : []),
    { key: assignmentKey(providerNode, providerModule), op: { op: 'consumedBy', n: 1 } },
    {
      key: { pk: `node#${consumerNode}`, sk: `consumes#${consumerModule}#${providerNode}#${providerModule}` },
      op: {
        op: 'put',
        item: relationItem(consumerNode, { consumerModule, providerNode, providerModule, kind }),
        condition: 'attribute_not_exists(pk)',
      },
    },
    raw({ Put: { TableName: tableName, Item: consumedByItem(relation) } }),
    {
      key: nodeKey(providerNode),
      op: { op: 'count', counts: { consumers: 1 }, limits: { consumers: meshLimits.consumersPerNode } },
    },
  ];
}

/** A relation on a consumer that exists: its count held to its limit, the consumer marked. */
export function relationFacts(
  tableName: string,
  relation: RelationChange,
  marks: (node: string) => Keyed[],
): Keyed[] {
  return [
    ...relationCore(tableName, relation, true),
    {
      key: nodeKey(relation.consumerNode),
      op: { op: 'count', counts: { consumes: 1 }, limits: { consumes: meshLimits.consumesPerNode } },
    },
    ...marks(relation.consumerNode),
  ];
}

/** A condition that did not hold, in the words the single writes use. */
export function errorOf(keyed: Keyed | undefined, old: Record<string, unknown> | undefined): Error {
  const node = String(old?.node ?? keyed?.key.pk.replace(/^node#/, '') ?? '?');
  if (!keyed) return new MeshRaceError('model', old);
  const { op } = keyed;
  if (op.op === 'put' && keyed.key.sk === 'node') return new NodeExistsError(node);
  if (op.op === 'put' && keyed.key.sk.startsWith('consumes#')) {
    const [, module, providerNode, providerModule] = keyed.key.sk.split('#');
    return new DuplicateRelationError(`${node}/${module}`, `${providerNode}/${providerModule}`);
  }
  if (op.op === 'consumedBy') {
    const [, module] = keyed.key.sk.split('#');
    return new NotAProviderError(node, module ?? '?');
  }
  if (op.op === 'count' && old) {
    const over = Object.keys(op.counts).find(
      (name) => Number(old[name] ?? 0) + (op.counts[name] ?? 0) > (op.limits[name] ?? 0),
    );
    if (over) {
      const limit =
        { modules: 'modulesPerNode', consumes: 'consumesPerNode', consumers: 'consumersPerNode' }[over] ??
        over;
      return new LimitReachedError(node, limit, op.limits[over] ?? 0, over);
    }
  }
  return new MeshRaceError('model', old);
}
