import {
  assignmentItem,
  carrierItem,
  consumedByItem,
  deliveryItem,
  grantItem,
  moduleKey,
  nodeItem,
  provisionItem,
  relationItem,
} from '../../lib/server/adapters/dynamodb/mesh-items.ts';
import type { Item } from '../../lib/server/adapters/dynamodb/requests.ts';
import { composeAsMinted, provisionName } from '../../lib/server/core/mesh/declaration.ts';
import type { Assignment, NodeSnapshot, Provision, Relation } from '../../lib/server/core/mesh/model.ts';
import { allEnrolled, enrolmentItemFor, seededProvision, testSealing } from '../../test/support/sealing.ts';

/**
 * A fleet as the scale bench seeds it, lighter than push.bench.ts's mesh so 50,000 nodes seed in
 * minutes: every node one module by its role (web, worker, db) and labelled `role`, `zone`;
 * one in 100 a broker, one in ten of the web nodes consuming one; every node sent its
 * declaration. About 4.5 items a node, as assign, consume and push leave them.
 */
export const fleetName = (i: number) => `node-${String(i).padStart(5, '0')}`;
const roles = ['web', 'worker', 'db'] as const;

export function fleetItems(size: number): Item[] {
  const at = '2026-01-01T00:00:00.000Z';
  const brokers = Array.from({ length: Math.max(1, Math.floor(size / 100)) }, (_, i) => fleetName(i * 100));
  const items: Item[] = [{ ...moduleKey('broker'), module: 'broker', provides: 'amqp' }];
  for (const role of roles) items.push({ ...moduleKey(role), module: role, version: '1.0' });
  const grantsOf = new Map<string, Provision[]>();
  const wants = new Map<string, [Relation, Provision]>();
  for (let i = 0; i < size; i += 1) {
    if (i % 30 !== 1) continue;
    const node = fleetName(i);
    const provider = brokers[i % brokers.length] as string;
    const relation: Relation = {
      consumerModule: 'web',
      providerNode: provider,
      providerModule: 'broker',
      kind: 'amqp',
    };
    const name = provisionName(node, 'web');
    const provision: Provision = seededProvision(
      { consumerNode: node, ...relation, resource: name, user: name, mintedAt: at },
      i,
    );
    wants.set(node, [relation, provision]);
    grantsOf.set(provider, [...(grantsOf.get(provider) ?? []), provision]);
  }
  for (let i = 0; i < size; i += 1) {
    const node = fleetName(i);
    const role = roles[i % 3] as (typeof roles)[number];
    const assignments: Assignment[] = [{ module: role, version: '1.0', provides: null }];
    if (i % 100 === 0) assignments.push({ module: 'broker', version: null, provides: 'amqp' });
    const want = wants.get(node);
    const grants = grantsOf.get(node) ?? [];
    const snapshot: NodeSnapshot = {
      node,
      assignments,
      relations: want ? [want[0]] : [],
      dependents: [],
      provisions: want ? [want[1]] : [],
      grants,
      sent: undefined,
      mark: undefined,
      sealingKey: testSealing.key,
    };
    const composed = composeAsMinted(snapshot, allEnrolled(snapshot));
    items.push(enrolmentItemFor(node));
    items.push({
      ...nodeItem(node, at, { role, zone: `z${i % 4}` }),
      modules: assignments.length,
      consumes: want ? 1 : 0,
      consumers: grants.length,
    });
    for (const assignment of assignments) {
      const consumedBy = assignment.module === 'broker' ? grants.length : 0;
      items.push({ ...assignmentItem(node, assignment), ...(consumedBy ? { consumedBy } : {}) });
      items.push(carrierItem(assignment.module, node, assignment.version));
    }
    if (want) {
      const [relation, provision] = want;
      items.push(relationItem(node, relation), provisionItem(provision), grantItem(provision));
      items.push(consumedByItem({ consumerNode: node, ...relation }));
    }
    items.push(
      deliveryItem({ node, revision: 1, digest: composed.digest, sentAt: at, canonical: composed.canonical }),
    );
  }
  return items;
}
