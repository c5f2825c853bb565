import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { Assignment, Provision, Relation } from '../../core/mesh/model.ts';
import { nodePartition } from './keys.ts';

/**
 * The mesh's items in the inventory table, and how each is read.
 *
 * | pk               | sk                            | what | gsi1pk / gsi1sk |
 * |------------------|-------------------------------|------|-----------------|
 * | `node#<n>`       | `node`                        | the node exists: node, createdAt | `mesh#node` / `<n>` (list every node) |
 * | `node#<n>`       | `mark`                        | possibly behind: marks (counter), markedAt | `mesh#marked` / `<n>` (list marked nodes) |
 * | `node#<n>`       | `module#<m>`                  | assignment: module, version?, provides? | `carriers#<m>` / `<n>` (a module's carriers) |
 * | `node#<n>`       | `consumes#<cm>#<pn>#<pm>`     | relation: consumerModule, providerNode, providerModule, kind | — |
 * | `node#<n>`       | `provision#<cm>#<pn>#<pm>`    | provision, consumer's side (how to reach it) | — |
 * | `node#<p>`       | `grant#<pm>#<cn>#<cm>`        | the same provision, provider's side (what to create) | — |
 * | `node#<n>`       | `delivery`                    | sent: revision, digest, sentAt, declaration (see mesh-delivery-item.ts) | — |
 * | `module#<m>`     | `module`                      | the module: version?, provides? | — |
 *
 * Access patterns: compose reads one node's partition whole (one strongly consistent Query);
 * find-behind queries `mesh#marked`; the audit and status query `mesh#node`; an upgrade queries
 * `carriers#<m>`. Marks are written in the same transaction as the change that causes them
 * and cleared by the send that answers them, only if no newer mark came in between.
 */
export type Item = Record<string, AttributeValue>;

export const S = (value: string): AttributeValue => ({ S: value });
export const N = (value: number): AttributeValue => ({ N: String(value) });

export const nodeKey = (node: string): Item => ({ pk: S(nodePartition(node)), sk: S('node') });
export const markKey = (node: string): Item => ({ pk: S(nodePartition(node)), sk: S('mark') });
export const assignmentKey = (node: string, module: string): Item => ({
  pk: S(nodePartition(node)),
  sk: S(`module#${module}`),
});
export const relationKeyOf = (node: string, r: Omit<Relation, 'kind'>): Item => ({
  pk: S(nodePartition(node)),
  sk: S(`consumes#${r.consumerModule}#${r.providerNode}#${r.providerModule}`),
});
export const provisionKeyOf = (p: Provision): Item => ({
  pk: S(nodePartition(p.consumerNode)),
  sk: S(`provision#${p.consumerModule}#${p.providerNode}#${p.providerModule}`),
});
export const grantKeyOf = (p: Provision): Item => ({
  pk: S(nodePartition(p.providerNode)),
  sk: S(`grant#${p.providerModule}#${p.consumerNode}#${p.consumerModule}`),
});
export const moduleKey = (module: string): Item => ({ pk: S(`module#${module}`), sk: S('module') });

export const allNodesIndex = 'mesh#node';
export const markedIndex = 'mesh#marked';
export const carriersIndex = (module: string) => `carriers#${module}`;

export function nodeItem(node: string, createdAt: string): Item {
  return {
    ...nodeKey(node),
    node: S(node),
    createdAt: S(createdAt),
    gsi1pk: S(allNodesIndex),
    gsi1sk: S(node),
  };
}

export function assignmentItem(node: string, a: Assignment): Item {
  return {
    ...assignmentKey(node, a.module),
    node: S(node),
    module: S(a.module),
    ...(a.version !== null ? { version: S(a.version) } : {}),
    ...(a.provides !== null ? { provides: S(a.provides) } : {}),
    gsi1pk: S(carriersIndex(a.module)),
    gsi1sk: S(node),
  };
}

export function relationItem(node: string, r: Relation): Item {
  return {
    ...relationKeyOf(node, r),
    consumerModule: S(r.consumerModule),
    providerNode: S(r.providerNode),
    providerModule: S(r.providerModule),
    kind: S(r.kind),
  };
}

function provisionAttributes(p: Provision): Item {
  return {
    consumerNode: S(p.consumerNode),
    consumerModule: S(p.consumerModule),
    providerNode: S(p.providerNode),
    providerModule: S(p.providerModule),
    kind: S(p.kind),
    resource: S(p.resource),
    user: S(p.user),
    secret: S(p.secret),
    mintedAt: S(p.mintedAt),
  };
}

export const provisionItem = (p: Provision): Item => ({ ...provisionKeyOf(p), ...provisionAttributes(p) });
export const grantItem = (p: Provision): Item => ({ ...grantKeyOf(p), ...provisionAttributes(p) });

const str = (item: Item, name: string) => item[name]?.S ?? '';
const optional = (item: Item, name: string) => item[name]?.S ?? null;

export const assignmentFrom = (item: Item): Assignment => ({
  module: str(item, 'module'),
  version: optional(item, 'version'),
  provides: optional(item, 'provides'),
});

export const relationFrom = (item: Item): Relation => ({
  consumerModule: str(item, 'consumerModule'),
  providerNode: str(item, 'providerNode'),
  providerModule: str(item, 'providerModule'),
  kind: str(item, 'kind'),
});

export const provisionFrom = (item: Item): Provision => ({
  consumerNode: str(item, 'consumerNode'),
  consumerModule: str(item, 'consumerModule'),
  providerNode: str(item, 'providerNode'),
  providerModule: str(item, 'providerModule'),
  kind: str(item, 'kind'),
  resource: str(item, 'resource'),
  user: str(item, 'user'),
  secret: str(item, 'secret'),
  mintedAt: str(item, 'mintedAt'),
});
