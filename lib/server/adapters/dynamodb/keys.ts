/**
 * Keys shared across areas. In the inventory table every item about one node lives under the
 * partition `node#<name>`, so `mesh status` reads a node whole with one Query; each area owns
 * its own sort keys and documents them beside its adapter.
 *
 * | sort key     | owner      | what it holds |
 * |--------------|------------|---------------|
 * | `node`       | mesh       | the node exists: name, createdAt |
 * | `token`      | enrolment  | the node's one live token: id, secret hash, expiry, claim, spend (token-store.ts) |
 * | `enrolment`  | enrolment  | enrolledAt, key thumbprint (token-store.ts; the keys are in the identity table) |
 * | `report`     | control    | the latest report (report-store.ts) |
 * | `presence`   | signal     | online, heardAt: the broker's latest lifecycle event (presence-store.ts) |
 * | `health`     | control    | the node's health and the ends of its outputs, as its host last reported them (report-store.ts) |
 * | others       | mesh       | assignments, relations, provisions, marks, delivery (mesh-items.ts) |
 *
 * The identity table keeps one item per presented key under the same partition name, sort key
 * `key#<thumbprint>` (node-key-store.ts), and `enrolled`: the thumbprint the spend made the
 * node's credential, written in the same transaction as the inventory's `enrolment` item
 * (token-store.ts). The host routes and the broker's authorizer verify a proof from the
 * identity table alone, so their roles read nothing of the inventory, where the tokens'
 * hashes and the provisions are.
 */
export const nodePartition = (node: string) => `node#${node}`;

export const nodeItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'node' });
export const tokenItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'token' });
export const enrolmentItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'enrolment' });
export const reportItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'report' });
export const presenceItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'presence' });
export const healthItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'health' });
export const factsItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'facts' });
export const identityKeyItemKey = (node: string, thumbprint: string) => ({
  pk: nodePartition(node),
  sk: `key#${thumbprint}`,
});
export const enrolledKeyItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'enrolled' });
