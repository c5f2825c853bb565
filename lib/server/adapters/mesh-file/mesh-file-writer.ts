import { randomUUID } from 'node:crypto';
import { type Actor, type AuditEntry, meshSubject, nodeEntry } from '../../core/audit/record.ts';
import { meshLimits } from '../../core/mesh/limits.ts';
import type { ApplyPlan, ModuleChange, RelationChange } from '../../core/mesh-file/plan.ts';
import {
  type LiveMeshReading,
  type LiveModule,
  type MeshFileWriter,
  noWriteProgress,
  type WriteOutcome,
  type WriteProgress,
} from '../../core/mesh-file/ports.ts';
import type { AuditTrail } from '../audit/audit-trail.ts';
import { markUpdates, moduleKey, nodeItem, nodeKey } from '../dynamodb/mesh-items.ts';
import { itemAbsent, TableStore, type TableStoreOptions, type TransactItem } from '../dynamodb/requests.ts';
import { ledgerExpiresAt, ledgerTransactionKey } from './apply-jobs.ts';
import { Batch, type Keyed, nodeExists } from './mesh-file-batch.ts';
import { assignmentFacts, errorOf, raw, relationCore, relationFacts } from './mesh-file-facts.ts';
import { commitPhase } from './mesh-file-lanes.ts';

const store = 'the inventory table';

/** Modules written as one fact: three items each and their records, with the node's own, well under 100. */
const modulesPerFact = 24;
/** Relations written with their consumer node's fact: four items each, with the node's own, under 100. */
const relationsPerFact = 12;
/** Transactions in flight at once, over disjoint items. */
const defaultLanes = 4;

/** One fact's writes, with the node it is about (none for a module's record). */
type Fact = { readonly node?: string; readonly writes: Keyed[] };

const providerKey = (r: RelationChange) => `${r.providerNode}/${r.providerModule}`;
const byProvider = (a: RelationChange, b: RelationChange) =>
  providerKey(a) < providerKey(b) ? -1 : providerKey(a) > providerKey(b) ? 1 : 0;
/** A module's record: only checked by the facts that assign it, so many transactions may hold it. */
const sharedKey = (key: string) => key.startsWith('module#') && key.endsWith('\u0000module');

/**
 * A plan's additions and labels, written in bulk on the inventory table: the items `mesh node
 * add`, `assign` and `consume` write (mesh-change-store.ts), with the same conditions, many facts
 * to a transaction (up to DynamoDB's 100 items). Phases run in order, because each needs the
 * last one's items: new modules' records; nodes that provide a relation added, and modules added
 * to nodes that exist; every other node added, with its modules and the relations it consumes as
 * one fact (its item carries its counts from the start, as `assign` and `consume` would have
 * counted them, and it is marked once); the relations left; labels. Within a phase, transactions
 * over disjoint items run side by side (mesh-file-lanes.ts).
 */
export class DynamoDBMeshFileWriter extends TableStore implements MeshFileWriter {
  readonly #lanes: number;
  readonly #audit: AuditTrail;

  constructor(options: TableStoreOptions & { readonly lanes?: number; readonly audit: AuditTrail }) {
    super(options);
    this.#lanes = options.lanes ?? defaultLanes;
    this.#audit = options.audit;
  }

  async write(
    plan: ApplyPlan,
    reading: LiveMeshReading,
    options: {
      readonly until?: number;
      readonly by: Actor;
      readonly job?: string;
      readonly progress?: WriteProgress;
    },
  ): Promise<WriteOutcome> {
    const now = this.now();
    const tableName = this.tableName;
    const progress = options.progress ?? noWriteProgress();
    const tally = progress;
    const touched = progress.touched;
    const records = new Map<string, LiveModule>(reading.modules);
    const marks = (node: string) => markUpdates(tableName, node, now).map(raw);

    // New modules' records first: every assignment after is conditioned on its record as written.
    const fresh = new Map<string, string | null>();
    for (const { module, provides } of plan.add.modules)
      if (!records.has(module) && !fresh.has(module)) fresh.set(module, provides);
    const recordFacts: Keyed[][] = [...fresh].map(([module, provides]) => {
      records.set(module, { version: null, provides });
      const item = { ...moduleKey(module), module, provides: provides ?? undefined };
      return [{ key: moduleKey(module), op: { op: 'put', item, condition: itemAbsent } }];
    });
    const record = (module: string) => records.get(module) as LiveModule;

    const modulesOf = new Map<string, ModuleChange[]>();
    for (const change of plan.add.modules)
      modulesOf.set(change.node, [...(modulesOf.get(change.node) ?? []), change]);
    const relationsOf = new Map<string, RelationChange[]>();
    for (const relation of plan.add.relations)
      relationsOf.set(relation.consumerNode, [...(relationsOf.get(relation.consumerNode) ?? []), relation]);
    const providers = new Set(plan.add.relations.map((r) => r.providerNode));
    const addedNodes = new Set(plan.add.nodes.map(({ node }) => node));
    // A node with more modules than fit one transaction beside it gets them in chunks, as a node that exists.
    const withNode = (node: string) => {
      const modules = modulesOf.get(node) ?? [];
      return modules.length <= modulesPerFact ? modules : [];
    };
    const folded = (node: string) => {
      const relations = relationsOf.get(node) ?? [];
      const fits = addedNodes.has(node) && !providers.has(node) && withNode(node).length > 0;
      return fits && relations.length <= relationsPerFact ? relations : [];
    };

    const nodeFact = (node: string, labels: Readonly<Record<string, string>>): Keyed[] => {
      const modules = withNode(node);
      const relations = folded(node);
      const item = {
        ...nodeItem(node, now, labels),
        ...(modules.length > 0 ? { modules: modules.length } : {}),
        ...(relations.length > 0 ? { consumes: relations.length } : {}),
      };
      return [
        { key: nodeKey(node), op: { op: 'put', item, condition: itemAbsent } },
        ...modules.flatMap((change) => assignmentFacts(tableName, change, record(change.module))),
        ...relations.flatMap((relation) => relationCore(tableName, relation, false)),
        ...marks(node),
      ];
    };
    const modulesFacts = function* (): Generator<Fact> {
      for (const [node, all] of modulesOf) {
        if (addedNodes.has(node) && withNode(node).length > 0) continue;
        for (let at = 0; at < all.length; at += modulesPerFact) {
          const modules = all.slice(at, at + modulesPerFact);
          const count: Keyed = {
            key: nodeKey(node),
            op: {
              op: 'count',
              counts: { modules: modules.length },
              limits: { modules: meshLimits.modulesPerNode },
            },
          };
          yield {
            node,
            writes: [
              count,
              ...modules.flatMap((change) => assignmentFacts(tableName, change, record(change.module))),
              ...marks(node),
            ],
          };
        }
      }
    };
    const firstProvider = (node: string) => folded(node).map(providerKey).sort()[0] ?? '';
    const consumers = plan.add.nodes
      .filter(({ node }) => !providers.has(node))
      .map((added) => ({ ...added, first: firstProvider(added.node) }))
      .sort((a, b) => (a.first < b.first ? -1 : a.first > b.first ? 1 : 0));
    const foldedSet = new Set(consumers.flatMap(({ node }) => folded(node)));
    const live = new Map(reading.mesh.nodes.map((node) => [node.node, node.labels]));

    const phases: Fact[][] = [
      recordFacts.map((writes) => ({ writes })),
      [
        ...plan.add.nodes
          .filter(({ node }) => providers.has(node))
          .map(({ node, labels }) => ({ node, writes: nodeFact(node, labels) })),
        ...modulesFacts(),
      ],
      consumers.map(({ node, labels }) => ({ node, writes: nodeFact(node, labels) })),
      plan.add.relations
        .filter((relation) => !foldedSet.has(relation))
        .sort(byProvider)
        .map((relation) => ({
          node: relation.consumerNode,
          writes: relationFacts(tableName, relation, marks),
        })),
      // Labels: not in a declaration, so they mark nothing.
      plan.labels.map(({ node, set, unset }) => ({
        node,
        writes: [raw(labelWrite(tableName, node, live.get(node), set, unset))],
      })),
    ];

    const until = options.until ?? Infinity;
    const pace = { longest: 0 };
    for (const facts of phases) {
      const commit = async (batch: Batch) => {
        await this.#commit(batch, tally, options.by, options.job);
        for (const node of batch.nodes) touched.add(node);
      };
      const done = await commitPhase(pack(facts), commit, {
        lanes: this.#lanes,
        until,
        shared: sharedKey,
        pace,
        committed: () => tally.transactions,
      });
      if (!done) return { ...counted(tally), touched: [...touched], complete: false };
    }
    return { ...counted(tally), touched: [...touched], complete: true };
  }

  async #commit(
    batch: Batch,
    tally: { transactions: number; items: number },
    by: Actor,
    job: string | undefined,
  ): Promise<void> {
    const items = batch.items(this.tableName);
    // The job's ledger item commits with the transaction or not at all: what a job wrote is
    // counted exactly, whatever part of it dies after (apply-jobs.ts, `ledger`).
    const ledger: TransactItem[] = job
      ? [
          {
            Put: {
              TableName: this.tableName,
              Item: {
                ...ledgerTransactionKey(job, randomUUID()),
                nodes: [...batch.nodes].sort(),
                items: items.length,
                expiresAt: ledgerExpiresAt(this.now()),
              },
            },
          },
        ]
      : [];
    const failed = await this.#audit.transact(
      store,
      [...items.map(({ write }) => write), ...ledger],
      applyEntry(batch, by),
    );
    tally.transactions += 1;
    if (!failed) {
      tally.items += items.length;
      return;
    }
    const at = failed.findIndex(Boolean);
    throw errorOf(items[at]?.keyed, failed[at]?.old);
  }
}

/**
 * One transaction of an apply, recorded on the chain of the first node it writes: transactions
 * side by side never share a node (mesh-file-lanes.ts), so they never race for one chain's head.
 * A batch of module records alone, which names no node, goes on the mesh's chain.
 */
function applyEntry(batch: Batch, by: Actor): AuditEntry {
  const nodes = [...batch.nodes].sort();
  const details = { nodes: nodes.length, named: nodes.slice(0, 20).join(','), items: batch.size };
  const first = nodes[0];
  return first === undefined
    ? { by, action: 'mesh.apply', subject: meshSubject, target: meshSubject, details }
    : nodeEntry(by, 'mesh.apply', first, { target: meshSubject, details });
}

const counted = ({ transactions, items }: { transactions: number; items: number }) => ({
  transactions,
  items,
});

/** Facts packed into transactions in order, each up to DynamoDB's 100 items. */
function pack(facts: readonly Fact[]): Batch[] {
  const batches: Batch[] = [];
  let batch = new Batch();
  for (const { node, writes } of facts) {
    if (batch.size > 0 && !batch.fits(writes)) {
      batches.push(batch);
      batch = new Batch();
    }
    batch.add(writes, node);
  }
  if (batch.size > 0) batches.push(batch);
  return batches;
}

function labelWrite(
  tableName: string,
  node: string,
  live: Readonly<Record<string, string>> | undefined,
  set: Readonly<Record<string, string>>,
  unset: readonly string[],
): TransactItem {
  const labels = { ...live };
  for (const key of unset) delete labels[key];
  Object.assign(labels, set);
  return {
    Update: {
      TableName: tableName,
      Key: nodeKey(node),
      ConditionExpression: nodeExists,
      ...(Object.keys(labels).length > 0
        ? { UpdateExpression: 'SET labels = :labels', ExpressionAttributeValues: { ':labels': labels } }
        : { UpdateExpression: 'REMOVE labels' }),
    },
  };
}
