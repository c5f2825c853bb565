import {
  DuplicateRelationError,
  LimitReachedError,
  MeshRaceError,
  NodeExistsError,
  NotAProviderError,
} from '../../core/mesh/errors.ts';
import { meshLimits } from '../../core/mesh/limits.ts';
import type { ApplyPlan, ModuleChange, RelationChange } from '../../core/mesh-file/plan.ts';
import type { LiveMeshReading, LiveModule, MeshFileWriter, WriteTally } from '../../core/mesh-file/ports.ts';
import { Batch, type Keyed, nodeExists } from './mesh-file-batch.ts';
import {
  assignmentItem,
  assignmentKey,
  carrierItem,
  consumedByItem,
  markUpdates,
  moduleKey,
  nodeItem,
  nodeKey,
  relationItem,
} from './mesh-items.ts';
import { itemAbsent, itemPresent, TableStore, type TransactItem, transact } from './requests.ts';

const store = 'the inventory table';

/** A write's key, for the batch: every TransactItem here names one item. */
const keyOf = (write: TransactItem): { pk: string; sk: string } => {
  const body = (write.Put?.Item ?? write.Update?.Key ?? write.Delete?.Key ?? write.ConditionCheck?.Key) as {
    pk: string;
    sk: string;
  };
  return { pk: body.pk, sk: body.sk };
};
const raw = (write: TransactItem): Keyed => ({ key: keyOf(write), op: { op: 'raw', write } });

/**
 * A plan's additions and labels, written in bulk on the inventory table: the items `mesh node
 * add`, `assign` and `consume` write (mesh-change-store.ts), with the same conditions, many facts
 * to a transaction (up to DynamoDB's 100 items). A node added with its modules is one fact: its
 * item carries its module count from the start, as `assign` would have counted it. Transactions
 * run one after another, each committed before the next, because the facts of one phase need the
 * last phase's items (a relation its provider's assignment) and two transactions touching one
 * item at once (a module's record, a provider's count) would cancel each other.
 */
export class DynamoDBMeshFileWriter extends TableStore implements MeshFileWriter {
  async write(
    plan: ApplyPlan,
    reading: LiveMeshReading,
    options: { readonly until?: number } = {},
  ): Promise<WriteTally & { readonly complete: boolean }> {
    const now = this.now();
    const tally = { transactions: 0, items: 0 };
    const until = options.until ?? Infinity;
    const records = new Map<string, LiveModule>(reading.modules);
    const moduleFacts = (change: ModuleChange): Keyed[] => {
      const record = records.get(change.module);
      const facts: Keyed[] = [];
      if (!record) {
        records.set(change.module, { version: null, provides: change.provides });
        facts.push({
          key: moduleKey(change.module),
          op: {
            op: 'put',
            item: {
              ...moduleKey(change.module),
              module: change.module,
              provides: change.provides ?? undefined,
            },
            condition: itemAbsent,
          },
        });
      } else facts.push({ key: moduleKey(change.module), op: moduleUnchanged(record) });
      const assignment = {
        module: change.module,
        version: record?.version ?? null,
        provides: record?.provides ?? change.provides,
      };
      facts.push({
        key: assignmentKey(change.node, change.module),
        op: { op: 'put', item: assignmentItem(change.node, assignment), condition: itemAbsent },
      });
      facts.push(
        raw({
          Put: {
            TableName: this.tableName,
            Item: carrierItem(change.module, change.node, assignment.version),
          },
        }),
      );
      return facts;
    };
    const marks = (node: string) => markUpdates(this.tableName, node, now).map(raw);

    const modulesOf = new Map<string, ModuleChange[]>();
    for (const change of plan.add.modules)
      modulesOf.set(change.node, [...(modulesOf.get(change.node) ?? []), change]);
    // A node with more modules than fit one transaction beside it gets them in chunks afterwards.
    const withNode = (node: string) => {
      const modules = modulesOf.get(node) ?? [];
      return modules.length <= modulesPerFact ? modules : [];
    };
    const added = new Set(
      plan.add.nodes.filter(({ node }) => withNode(node).length > 0).map(({ node }) => node),
    );

    const phases: Array<Iterable<Keyed[]>> = [
      // Nodes added, each with its modules: one fact.
      (function* () {
        for (const { node, labels } of plan.add.nodes) {
          const modules = withNode(node);
          const item = {
            ...nodeItem(node, now, labels),
            ...(modules.length > 0 ? { modules: modules.length } : {}),
          };
          yield [
            { key: nodeKey(node), op: { op: 'put', item, condition: itemAbsent } },
            ...modules.flatMap(moduleFacts),
            ...marks(node),
          ];
        }
      })(),
      // Modules added to nodes that exist, counted on the node under its limit.
      (function* () {
        for (const [node, all] of modulesOf) {
          if (added.has(node)) continue;
          for (let at = 0; at < all.length; at += modulesPerFact) {
            const modules = all.slice(at, at + modulesPerFact);
            yield [
              {
                key: nodeKey(node),
                op: {
                  op: 'count',
                  counts: { modules: modules.length },
                  limits: { modules: meshLimits.modulesPerNode },
                },
              },
              ...modules.flatMap(moduleFacts),
              ...marks(node),
            ];
          }
        }
      })(),
      // Relations, those of one provider side by side so its counts merge in fewer transactions.
      (function* (tableName: string) {
        const relations = [...plan.add.relations].sort((a, b) =>
          providerKey(a) < providerKey(b) ? -1 : providerKey(a) > providerKey(b) ? 1 : 0,
        );
        for (const relation of relations) yield relationFacts(tableName, relation, marks);
      })(this.tableName),
      // Labels: not in a declaration, so they mark nothing.
      (function* (tableName: string, live: ReadonlyMap<string, Readonly<Record<string, string>>>) {
        for (const { node, set, unset } of plan.labels) {
          const labels = { ...live.get(node) };
          for (const key of unset) delete labels[key];
          Object.assign(labels, set);
          const write: TransactItem = {
            Update: {
              TableName: tableName,
              Key: nodeKey(node),
              ConditionExpression: nodeExists,
              ...(Object.keys(labels).length > 0
                ? {
                    UpdateExpression: 'SET labels = :labels',
                    ExpressionAttributeValues: { ':labels': labels },
                  }
                : { UpdateExpression: 'REMOVE labels' }),
            },
          };
          yield [raw(write)];
        }
      })(this.tableName, new Map(reading.mesh.nodes.map((node) => [node.node, node.labels]))),
    ];

    for (const phase of phases) {
      let batch = new Batch();
      for (const fact of phase) {
        if (batch.size > 0 && !batch.fits(fact)) {
          if (tally.transactions > 0 && Date.now() > until) return { ...tally, complete: false };
          await this.#commit(batch, tally);
          batch = new Batch();
        }
        batch.add(fact);
      }
      if (batch.size > 0) {
        if (tally.transactions > 0 && Date.now() > until) return { ...tally, complete: false };
        await this.#commit(batch, tally);
      }
    }
    return { ...tally, complete: true };
  }

  async #commit(batch: Batch, tally: { transactions: number; items: number }): Promise<void> {
    const items = batch.items(this.tableName);
    const failed = await transact(
      this.client,
      store,
      items.map(({ write }) => write),
    );
    tally.transactions += 1;
    if (!failed) {
      tally.items += items.length;
      return;
    }
    const at = failed.findIndex(Boolean);
    const found = items[at];
    throw errorOf(found?.keyed, failed[at]?.old);
  }
}

/** Modules written as one fact: three items each and their records, with the node's own, well under 100. */
const modulesPerFact = 24;

const providerKey = (r: RelationChange) => `${r.providerNode}/${r.providerModule}`;

/** The module's record unchanged since it was read, as `assign` holds it. */
function moduleUnchanged(record: LiveModule): Keyed['op'] {
  const version = record.version === null ? 'attribute_not_exists(version)' : 'version = :version';
  const provides = record.provides === null ? 'attribute_not_exists(provides)' : 'provides = :provides';
  const values = {
    ...(record.version !== null ? { ':version': record.version } : {}),
    ...(record.provides !== null ? { ':provides': record.provides } : {}),
  };
  return {
    op: 'check',
    condition: `${version} AND ${provides}`,
    ...(Object.keys(values).length > 0 ? { values } : {}),
  };
}

/** What `consume` writes for one relation, its counts held to the limits. */
function relationFacts(
  tableName: string,
  relation: RelationChange,
  marks: (node: string) => Keyed[],
): Keyed[] {
  const { consumerNode, consumerModule, providerNode, providerModule, kind } = relation;
  return [
    { key: assignmentKey(consumerNode, consumerModule), op: { op: 'check', condition: itemPresent } },
    { key: assignmentKey(providerNode, providerModule), op: { op: 'consumedBy', n: 1 } },
    {
      key: { pk: `node#${consumerNode}`, sk: `consumes#${consumerModule}#${providerNode}#${providerModule}` },
      op: {
        op: 'put',
        item: relationItem(consumerNode, { consumerModule, providerNode, providerModule, kind }),
        condition: itemAbsent,
      },
    },
    raw({ Put: { TableName: tableName, Item: consumedByItem(relation) } }),
    {
      key: nodeKey(consumerNode),
      op: { op: 'count', counts: { consumes: 1 }, limits: { consumes: meshLimits.consumesPerNode } },
    },
    {
      key: nodeKey(providerNode),
      op: { op: 'count', counts: { consumers: 1 }, limits: { consumers: meshLimits.consumersPerNode } },
    },
    ...marks(consumerNode),
  ];
}

/** A condition that did not hold, in the words the single writes use. */
function errorOf(keyed: Keyed | undefined, old: Record<string, unknown> | undefined): Error {
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
