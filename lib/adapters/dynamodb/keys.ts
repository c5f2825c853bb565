/**
 * Keys shared across areas in the inventory table. Every item about one node lives under the
 * partition `node#<name>`, so `mesh status` reads a node whole with one Query; each area owns
 * its own sort keys and documents them beside its adapter.
 *
 * | sort key     | owner      | what it holds |
 * |--------------|------------|---------------|
 * | `node`       | mesh       | the node exists: name, createdAt |
 * | `token`      | enrolment  | the node's one live token: id, secret hash, expiry, claim, spend |
 * | `enrolment`  | enrolment  | enrolledAt, key thumbprint (the node's keys are in the identity table) |
 * | `report`     | queue      | the latest report: sequence, state, revision, step, sentAt, heardAt |
 * | others       | mesh       | assignments, relations, provisions, sent, delivery (see the mesh store) |
 */
export const nodePartition = (node: string) => `node#${node}`;

export const nodeItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'node' }) as const;
export const tokenItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'token' }) as const;
export const enrolmentItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'enrolment' }) as const;
export const reportItemKey = (node: string) => ({ pk: nodePartition(node), sk: 'report' }) as const;
