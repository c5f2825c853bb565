import { deliveryEtag } from '../../core/mesh/declaration.ts';
import type {
  Assignment,
  Dependent,
  NodeSnapshot,
  Provision,
  Relation,
  SealingKey,
  Sent,
} from '../../core/mesh/model.ts';
import type { RelationRef } from '../../core/mesh/removal.ts';
import type { WaitingRelations } from '../../core/mesh/waiting.ts';
import type { Delivery } from '../../core/push/ports.ts';
import { nodeItemKey, nodePartition } from './keys.ts';
import { provisionFrom, sealingKeyFrom } from './provision-items.ts';

export {
  grantItem,
  grantKeyOf,
  provisionFrom,
  provisionItem,
  provisionKeyOf,
  sealingKeyFrom,
} from './provision-items.ts';

import type { Item, TransactItem } from './requests.ts';

/**
 * The mesh's items in the inventory table, and how each is read.
 *
 * | pk               | sk                            | what | gsi1pk / gsi1sk |
 * |------------------|-------------------------------|------|-----------------|
 * | `node#<n>`       | `node`                        | the node exists: node, createdAt, labels? (M, absent when none), modules/consumes/consumers (N, counts held to the limits), agentVersion? (the agent version its host is to run, agent-versions.ts) | `mesh#node` / `<n>` (list every node) |
 * | `node#<n>`       | `mark`                        | possibly behind: marks (counter), markedAt | — |
 * | `mesh#marked`    | `<n>`                         | the same mark, in the one partition find-behind reads | — |
 * | `node#<n>`       | `module#<m>`                  | assignment: module, version?, provides?, consumedBy (N, how many relations consume it) | — |
 * | `module#<m>`     | `carrier#<n>`                 | the same assignment, in the module's partition: node, version? (the assignment's) | — |
 * | `node#<n>`       | `consumes#<cm>#<pn>#<pm>`     | relation: consumerModule, providerNode, providerModule, kind | — |
 * | `node#<p>`       | `consumedby#<pm>#<cn>#<cm>`   | the same relation on the provider's side: consumerNode, consumerModule, providerModule | — |
 * | `node#<n>`       | `provision#<cm>#<pn>#<pm>`    | provision, consumer's side (how to reach it): generation, fingerprint, sealedForConsumer, sealedToConsumer/sealedToProvider (key ids), rotationAsked? | — |
 * | `node#<p>`       | `grant#<pm>#<cn>#<cm>`        | the same provision, provider's side (what to create): the same, with sealedForProvider | — |
 * | `node#<n>`       | `delivery`                    | sent: revision, digest, sentAt, declaration (canonical JSON, the bytes the digest is of), or `parts` (N) when it is kept in parts (declaration-parts.ts); waitingRelations/waitingNodes (N), waitingFor (L, the first 10 names) when relations wait | — |
 * | `module#<m>`     | `module`                      | the module: version?, provides? | — |
 * | `mesh#file`      | `described`                   | the last file an apply was given (fileDigest, SHA-256 of its text) and the revision of the mesh it describes (mesh-file-described.ts) | — |
 *
 * Access patterns: compose reads one node's partition whole (one strongly consistent Query);
 * find-behind reads `mesh#marked` and an upgrade a module's `carrier#` items, both strongly
 * consistent Queries of the base table, because an index (eventually consistent on AWS) could
 * hide a mark written a moment before and a push would then call the mesh consistent while a
 * node is behind. Only status and the audit list nodes through gsi1 (`mesh#node`); the audit
 * adds every marked node to that list, so a node the index has not caught up with is still seen.
 * A mark and its `mesh#marked` entry are written in the same transaction as the change that
 * causes them and cleared together by the send that answers them, only if no newer mark came
 * in between; an assignment and its carrier item are written together too, and a relation and
 * its provider-side entry, with the provider's `consumedBy` counted up, so a removal of the
 * provider sees every consumer in one strongly consistent read of its own partition and fails
 * if one came in since.
 */
export const nodeKey = nodeItemKey;
export const markKey = (node: string) => ({ pk: nodePartition(node), sk: 'mark' });
export const markedPartition = 'mesh#marked';
export const markedKey = (node: string) => ({ pk: markedPartition, sk: node });
export const deliveryKey = (node: string) => ({ pk: nodePartition(node), sk: 'delivery' });
export const assignmentKey = (node: string, module: string) => ({
  pk: nodePartition(node),
  sk: `module#${module}`,
});
export const relationKeyOf = (node: string, r: Omit<Relation, 'kind'>) => ({
  pk: nodePartition(node),
  sk: `consumes#${r.consumerModule}#${r.providerNode}#${r.providerModule}`,
});
export const consumedByKey = (r: RelationRef) => ({
  pk: nodePartition(r.providerNode),
  sk: `consumedby#${r.providerModule}#${r.consumerNode}#${r.consumerModule}`,
});
export const modulePartition = (module: string) => `module#${module}`;
export const moduleKey = (module: string) => ({ pk: modulePartition(module), sk: 'module' });
export const carrierPrefix = 'carrier#';
export const carrierKey = (module: string, node: string) => ({
  pk: modulePartition(module),
  sk: `${carrierPrefix}${node}`,
});

export const allNodesIndex = 'mesh#node';

export const nodeItem = (
  node: string,
  createdAt: string,
  labels: Readonly<Record<string, string>> = {},
): Item => ({
  ...nodeKey(node),
  node,
  createdAt,
  ...(Object.keys(labels).length > 0 ? { labels: { ...labels } } : {}),
  gsi1pk: allNodesIndex,
  gsi1sk: node,
});

/** The node's labels as its item holds them; none when the item has no `labels` map. */
export function labelsFrom(item: Item | undefined): Record<string, string> {
  const labels = item?.labels;
  if (!labels || typeof labels !== 'object') return {};
  return Object.fromEntries(
    Object.entries(labels as Record<string, unknown>)
      .filter((entry): entry is [string, string] => typeof entry[1] === 'string')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
}

export const assignmentItem = (node: string, a: Assignment): Item => ({
  ...assignmentKey(node, a.module),
  node,
  module: a.module,
  version: a.version ?? undefined,
  provides: a.provides ?? undefined,
});

export const carrierItem = (module: string, node: string, version: string | null): Item => ({
  ...carrierKey(module, node),
  node,
  version: version ?? undefined,
});

export const relationItem = (node: string, r: Relation): Item => ({ ...relationKeyOf(node, r), ...r });

export const consumedByItem = (r: RelationRef): Item => ({
  ...consumedByKey(r),
  consumerNode: r.consumerNode,
  consumerModule: r.consumerModule,
  providerModule: r.providerModule,
});

/** The mark is still the one a read saw; and there was none when it saw none. */
export const markIsAsSeen = 'marks = :seen';
export const unmarked = 'attribute_not_exists(pk)';

/**
 * The stale mark, as the items of a transaction: a counter in the node's partition, so a send
 * clears only the mark it answered, and its entry in `mesh#marked`, where find-behind reads it.
 * With `fence`, the counter moves on only from the mark seen (`seen` undefined: none), so a
 * write done in steps fails at the step after anything else marked the node (push-store.ts).
 */
export function markUpdates(
  tableName: string,
  node: string,
  markedAt: string,
  fence?: { readonly seen: number | undefined },
): TransactItem[] {
  const seen = fence?.seen;
  return [
    {
      Update: {
        TableName: tableName,
        Key: markKey(node),
        UpdateExpression: 'ADD marks :one SET #node = :node, markedAt = :now',
        ...(fence ? { ConditionExpression: seen === undefined ? unmarked : markIsAsSeen } : {}),
        ExpressionAttributeNames: { '#node': 'node' },
        ExpressionAttributeValues: {
          ':one': 1,
          ':node': node,
          ':now': markedAt,
          ...(seen === undefined ? {} : { ':seen': seen }),
        },
      },
    },
    { Put: { TableName: tableName, Item: { ...markedKey(node), node, markedAt } } },
  ];
}

/** Clears a node's mark and its `mesh#marked` entry, if the mark is still the one `seen`. */
export function markClears(tableName: string, node: string, seen: number): TransactItem[] {
  return [
    {
      Delete: {
        TableName: tableName,
        Key: markKey(node),
        ConditionExpression: markIsAsSeen,
        ExpressionAttributeValues: { ':seen': seen },
      },
    },
    { Delete: { TableName: tableName, Key: markedKey(node) } },
  ];
}

const text = (item: Item, name: string) => (typeof item[name] === 'string' ? (item[name] as string) : '');
const optional = (item: Item, name: string) =>
  typeof item[name] === 'string' ? (item[name] as string) : null;

export const assignmentFrom = (item: Item): Assignment => ({
  module: text(item, 'module'),
  version: optional(item, 'version'),
  provides: optional(item, 'provides'),
});

export const relationFrom = (item: Item): Relation => ({
  consumerModule: text(item, 'consumerModule'),
  providerNode: text(item, 'providerNode'),
  providerModule: text(item, 'providerModule'),
  kind: text(item, 'kind'),
});

/**
 * The head of a send: the declaration itself, or with `parts` how many parts hold it
 * (declaration-parts.ts), and, when relations wait, their digest (core/mesh/waiting.ts) for the
 * views and the summary, which read this item and never the declaration.
 */
export const deliveryItem = (
  delivery: Sent & {
    readonly node: string;
    readonly canonical: string;
    readonly waiting?: WaitingRelations;
  },
  parts?: number,
): Item => ({
  ...deliveryKey(delivery.node),
  node: delivery.node,
  revision: delivery.revision,
  digest: delivery.digest,
  sentAt: delivery.sentAt,
  ...(parts === undefined ? { declaration: delivery.canonical } : { parts }),
  ...(delivery.waiting
    ? {
        waitingRelations: delivery.waiting.relations,
        waitingNodes: delivery.waiting.nodes,
        waitingFor: [...delivery.waiting.for],
      }
    : {}),
});

/** The waiting relations a delivery item counts; undefined when none waits (or it was sent before they were counted). */
export function waitingFrom(item: Item | undefined): WaitingRelations | undefined {
  const relations = item?.waitingRelations;
  if (typeof relations !== 'number' || relations <= 0) return undefined;
  const named = Array.isArray(item?.waitingFor) ? item.waitingFor.map(String) : [];
  const nodes = typeof item?.waitingNodes === 'number' ? item.waitingNodes : named.length;
  return { relations, nodes, for: named };
}

export const sentFrom = (item: Item): Sent => ({
  revision: Number(item.revision ?? 0),
  digest: text(item, 'digest'),
  sentAt: text(item, 'sentAt'),
  ...(typeof item.parts === 'number' ? { parts: item.parts } : {}),
});

/**
 * What a host fetches, from the head and the declaration's canonical JSON: the head's own, or
 * joined from its parts; null when it was not read (the host has it already).
 */
export function deliveryFrom(item: Item, canonical: string | null = text(item, 'declaration')): Delivery {
  const { revision, digest, sentAt } = sentFrom(item);
  return {
    node: text(item, 'node'),
    revision,
    digest,
    sentAt,
    etag: deliveryEtag(digest, revision),
    declaration: canonical === null ? undefined : JSON.parse(canonical || 'null'),
  };
}

const dependentFrom = (item: Item): Dependent => ({
  consumerNode: text(item, 'consumerNode'),
  consumerModule: text(item, 'consumerModule'),
  providerModule: text(item, 'providerModule'),
});

/** A node as the core sees it, from its partition read whole; undefined when the node does not exist. */
export function snapshotFrom(node: string, items: readonly Item[]): NodeSnapshot | undefined {
  if (!items.some((item) => item.sk === 'node')) return undefined;
  const snapshot = {
    node,
    assignments: [] as Assignment[],
    relations: [] as Relation[],
    dependents: [] as Dependent[],
    provisions: [] as Provision[],
    grants: [] as Provision[],
    sent: undefined as Sent | undefined,
    mark: undefined as number | undefined,
    sealingKey: undefined as SealingKey | undefined,
    agent: undefined as string | undefined,
  };
  for (const item of items) {
    const sk = String(item.sk);
    if (sk.startsWith('module#')) snapshot.assignments.push(assignmentFrom(item));
    else if (sk.startsWith('consumes#')) snapshot.relations.push(relationFrom(item));
    else if (sk.startsWith('consumedby#')) snapshot.dependents.push(dependentFrom(item));
    else if (sk.startsWith('provision#')) snapshot.provisions.push(provisionFrom(item));
    else if (sk.startsWith('grant#')) snapshot.grants.push(provisionFrom(item));
    else if (sk === 'delivery') snapshot.sent = sentFrom(item);
    else if (sk === 'mark') snapshot.mark = Number(item.marks ?? 0);
    else if (sk === 'enrolment') snapshot.sealingKey = sealingKeyFrom(item);
    else if (sk === 'node' && typeof item.agentVersion === 'string') snapshot.agent = item.agentVersion;
  }
  return snapshot;
}
