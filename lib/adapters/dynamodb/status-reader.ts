import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { mapLimit } from '../../core/map-limit.ts';
import type { NodeStatus, StatusReader } from '../../core/ports.ts';
import { nodePartition } from './keys.ts';
import { allNodesIndex } from './mesh-items.ts';
import { type Item, queryAll } from './requests.ts';

const store = 'the inventory table';

/**
 * `mesh status` as a read model over each node's partition: the mesh's node, mark and delivery
 * items, the enrolment's `enrolment` item (token-store.ts) and the control area's `report`
 * item (report-store.ts), read whole with one Query per node.
 */
export class DynamoDBStatusReader implements StatusReader {
  readonly #client: DynamoDBDocumentClient;
  readonly #table: string;

  constructor(options: { readonly client: DynamoDBDocumentClient; readonly tableName: string }) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  async status(): Promise<NodeStatus[]> {
    const nodes = await queryAll(this.#client, store, {
      TableName: this.#table,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :index',
      ExpressionAttributeValues: { ':index': allNodesIndex },
    });
    const statuses = await mapLimit(nodes, 16, (item) => this.#statusOf(String(item.gsi1sk)));
    return statuses.filter((status): status is NodeStatus => status !== undefined);
  }

  async #statusOf(node: string): Promise<NodeStatus | undefined> {
    const items = await queryAll(this.#client, store, {
      TableName: this.#table,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': nodePartition(node) },
      ConsistentRead: true,
    });
    const bySk = new Map(items.map((item) => [String(item.sk), item]));
    if (!bySk.has('node')) return undefined;
    const delivery = bySk.get('delivery');
    const enrolment = bySk.get('enrolment');
    const report = bySk.get('report');
    const reportedApplied = report?.state === 'applied';
    return {
      node,
      enrolled: enrolment !== undefined,
      enrolledAt: textOf(enrolment, 'enrolledAt'),
      sentRevision: numberOf(delivery, 'revision'),
      sentAt: textOf(delivery, 'sentAt'),
      // The report keeps the last applied revision apart from its state, so a newer revision
      // applying or failed does not hide what the host runs; older reports only had `revision`.
      appliedRevision:
        numberOf(report, 'appliedRevision') ?? (reportedApplied ? numberOf(report, 'revision') : null),
      appliedAt: textOf(report, 'appliedAt') ?? (reportedApplied ? textOf(report, 'heardAt') : null),
      reportState: textOf(report, 'state'),
      behind: bySk.has('mark'),
      lastHeard: textOf(report, 'heardAt'),
    };
  }
}

const textOf = (item: Item | undefined, name: string) =>
  typeof item?.[name] === 'string' ? (item[name] as string) : null;
const numberOf = (item: Item | undefined, name: string) =>
  typeof item?.[name] === 'number' ? (item[name] as number) : null;
