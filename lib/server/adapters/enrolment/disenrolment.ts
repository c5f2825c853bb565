import { type DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, nodeEntry } from '../../core/audit/record.ts';
import { NodeUnknownError } from '../../core/enrolment/errors.ts';
import type { Disenrolled, HostIdentityRevocation } from '../../core/enrolment/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import type { AuditTrail } from '../audit/audit-trail.ts';
import {
  enrolledKeyItemKey,
  enrolmentItemKey,
  nodeItemKey,
  nodePartition,
  tokenItemKey,
} from '../dynamodb/keys.ts';
import { itemPresent, queryAll } from '../dynamodb/requests.ts';

const nodeExists = itemPresent;
const store = 'the inventory table';

/**
 * A node's host identity taken away across both tables in one transaction: the inventory's
 * `token` and `enrolment` items (token-store.ts), and the node's `enrolled` item and every
 * `key#` item in the identity table (keys.ts, node-key-store.ts). The node stays, with all it
 * holds.
 */
export class DynamoDBDisenrolment implements HostIdentityRevocation {
  readonly #client: DynamoDBDocumentClient;
  readonly #inventory: string;
  readonly #identity: string;
  readonly #audit: AuditTrail;

  constructor(options: {
    readonly client: DynamoDBDocumentClient;
    readonly inventoryTable: string;
    readonly identityTable: string;
    readonly audit: AuditTrail;
  }) {
    this.#client = options.client;
    this.#inventory = options.inventoryTable;
    this.#identity = options.identityTable;
    this.#audit = options.audit;
  }

  async disenrol(node: string, by: Actor): Promise<Disenrolled> {
    const [{ Item: enrolment }, keys] = await Promise.all([
      askStore(store, () =>
        this.#client.send(
          new GetCommand({ TableName: this.#inventory, Key: enrolmentItemKey(node), ConsistentRead: true }),
        ),
      ),
      queryAll(this.#client, 'the identity table', {
        TableName: this.#identity,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :key)',
        ExpressionAttributeValues: { ':pk': nodePartition(node), ':key': 'key#' },
        ProjectionExpression: 'pk, sk',
        ConsistentRead: true,
      }),
    ]);
    const entry = nodeEntry(by, 'node.disenrol', node, {
      details: { wasEnrolled: enrolment !== undefined, keysRevoked: keys.length },
    });
    const failed = await this.#audit.transact(
      store,
      [
        {
          ConditionCheck: {
            TableName: this.#inventory,
            Key: nodeItemKey(node),
            ConditionExpression: nodeExists,
          },
        },
        { Delete: { TableName: this.#inventory, Key: tokenItemKey(node) } },
        { Delete: { TableName: this.#inventory, Key: enrolmentItemKey(node) } },
        { Delete: { TableName: this.#identity, Key: enrolledKeyItemKey(node) } },
        ...keys.map((key) => ({
          Delete: { TableName: this.#identity, Key: { pk: String(key.pk), sk: String(key.sk) } },
        })),
      ],
      entry,
    );
    if (failed) throw new NodeUnknownError(node);
    return { node, wasEnrolled: enrolment !== undefined, keysRevoked: keys.length };
  }
}
