import { mapLimit } from '../../core/map-limit.ts';
import { type HostFacts, hostFacts } from '../../core/mesh/host-facts.ts';
import type { NodeHealth, NodeRevert, NodeStatus, StatusReader } from '../../core/views/ports.ts';
import { nodePartition } from '../dynamodb/keys.ts';
import { allNodesIndex, labelsFrom, waitingFrom } from '../dynamodb/mesh-items.ts';
import { type Item, queryAll, TableStore } from '../dynamodb/requests.ts';

const store = 'the inventory table';

/**
 * `mesh status` as a read model over each node's partition: the mesh's node, mark and delivery
 * items, the enrolment's `enrolment` item (token-store.ts), the control area's `report` and
 * `health` and `facts` items (report-store.ts) and the signal's `presence` item (presence-store.ts), read whole with one
 * Query per node. The relations waiting for an enrolment come from the delivery item, which
 * counts them at each send, so no provider's partition is read.
 */
export class DynamoDBStatusReader extends TableStore implements StatusReader {
  async status(): Promise<NodeStatus[]> {
    const nodes = await queryAll(this.client, store, {
      TableName: this.tableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :index',
      ExpressionAttributeValues: { ':index': allNodesIndex },
    });
    const statuses = await mapLimit(nodes, 16, (item) => this.#statusOf(String(item.gsi1sk)));
    return statuses.filter((status): status is NodeStatus => status !== undefined);
  }

  async #statusOf(node: string): Promise<NodeStatus | undefined> {
    const items = await queryAll(this.client, store, {
      TableName: this.tableName,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodePartition(node) },
      ConsistentRead: true,
    });
    return nodeStatusOf(node, items);
  }
}

/** One node's status from the items of its partition; undefined when the node item is not there. */
export function nodeStatusOf(node: string, items: readonly Item[]): NodeStatus | undefined {
  const bySk = new Map(items.map((item) => [String(item.sk), item]));
  if (!bySk.has('node')) return undefined;
  const delivery = bySk.get('delivery');
  const enrolment = bySk.get('enrolment');
  const report = bySk.get('report');
  const presence = bySk.get('presence');
  const health = healthOf(bySk.get('health'));
  const revert = revertOf(report);
  const labels = labelsFrom(bySk.get('node'));
  const waiting = waitingFrom(delivery);
  const facts = factsOf(bySk.get('facts'));
  return {
    node,
    enrolled: enrolment !== undefined,
    enrolledAt: textOf(enrolment, 'enrolledAt'),
    sentRevision: numberOf(delivery, 'revision'),
    sentAt: textOf(delivery, 'sentAt'),
    // The report keeps the last applied revision apart from its state, so a newer revision
    // applying or failed does not hide what the host runs.
    appliedRevision: numberOf(report, 'appliedRevision'),
    appliedAt: textOf(report, 'appliedAt'),
    reportState: textOf(report, 'state'),
    behind: bySk.has('mark'),
    online: typeof presence?.online === 'boolean' ? presence.online : null,
    lastHeard: latest(textOf(report, 'heardAt'), textOf(presence, 'heardAt')),
    ...(Object.keys(labels).length > 0 ? { labels } : {}),
    ...(waiting ? { waiting } : {}),
    ...(health ? { health } : {}),
    ...(revert ? { revert } : {}),
    ...(facts ? { facts } : {}),
  };
}

/** The facts item (facts-items.ts) as status shows it; undefined when there is none, or it does not read. */
export function factsOf(item: Item | undefined): HostFacts | undefined {
  if (!item) return undefined;
  const { pk: _pk, sk: _sk, ...facts } = item;
  const read = hostFacts.safeParse(facts);
  return read.success ? read.data : undefined;
}

const healthStates: readonly string[] = ['healthy', 'unhealthy', 'unknown'];
const revertCauses: readonly string[] = ['failed', 'unhealthy', 'cut-off'];

/** The health item (report-store.ts) as status shows it; undefined when there is none. */
export function healthOf(item: Item | undefined): NodeHealth | undefined {
  const state = textOf(item, 'state');
  if (!item || state === null || !healthStates.includes(state)) return undefined;
  const typed = state as NodeHealth['state'];
  return {
    state: typed,
    check: item.check === true,
    revision: numberOf(item, 'revision') ?? 0,
    since: textOf(item, `${typed}Since`),
    checkedAt: textOf(item, 'checkedAt'),
    reason: textOf(item, 'reason'),
  };
}

/** The revert the report item keeps while its latest report is one; undefined otherwise. */
function revertOf(report: Item | undefined): NodeRevert | undefined {
  const from = numberOf(report, 'revertedFrom');
  const to = numberOf(report, 'revertedTo');
  const cause = textOf(report, 'revertCause');
  if (from === null || to === null || cause === null || !revertCauses.includes(cause)) return undefined;
  return {
    from,
    to,
    cause: cause as NodeRevert['cause'],
    ok: report?.revertOk === true,
    at: textOf(report, 'revertedAt'),
  };
}

export const textOf = (item: Item | undefined, name: string) =>
  typeof item?.[name] === 'string' ? (item[name] as string) : null;
/** ISO times compare as strings. */
const latest = (...times: Array<string | null>) =>
  times.reduce<string | null>(
    (last, time) => (time !== null && (last === null || time > last) ? time : last),
    null,
  );
export const numberOf = (item: Item | undefined, name: string) =>
  typeof item?.[name] === 'number' ? (item[name] as number) : null;
