import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Refusal, RefusalLog } from '../../core/audit/ports.ts';
import { TableStore, type TableStoreOptions } from '../dynamodb/requests.ts';
import { auditDayPartition } from './audit-trail.ts';

/**
 * Refused requests in the inventory table, outside any chain: one counter per source and minute,
 *
 * | pk                          | sk         | attributes |
 * |-----------------------------|------------|------------|
 * | `audit#refused#<minute>`    | `<source>` | count (at most `refusalsCounted`), time (the minute), the last refusal's principal, requestId, target (route), outcome (`<status> <code>`); action `request.refused`; expiresAt; gsi1pk `audit#day#<day>`, gsi1sk `<minute>#refused#<source>` |
 *
 * so a flood from one address writes one item a minute and stops counting at the bound
 * (`belowBound`): it cannot fill the table, and `mesh audit` lists the counters among the records
 * by their minute. One UpdateItem, best effort: a refusal that cannot be noted is dropped.
 */
export const refusedPartitions = 'audit#refused#*';
export const refusalsCounted = 1_000;
const belowBound = 'attribute_not_exists(#count) OR #count < :bound';

export class DynamoDBRefusalLog extends TableStore implements RefusalLog {
  readonly #retentionDays: number;

  constructor(options: TableStoreOptions & { readonly retentionDays: number }) {
    super(options);
    this.#retentionDays = options.retentionDays;
  }

  async note(refusal: Refusal): Promise<void> {
    const now = this.now();
    const minute = `${now.slice(0, 16)}:00.000Z`;
    const source = refusal.by.source;
    try {
      await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: `audit#refused#${minute.slice(0, 16)}`, sk: source },
          UpdateExpression:
            'ADD #count :one SET #time = :minute, principal = :principal, #source = :source, requestId = :requestId, #action = :action, target = :target, outcome = :outcome, subject = :subject, expiresAt = :expiresAt, gsi1pk = :day, gsi1sk = :at',
          ConditionExpression: belowBound,
          ExpressionAttributeNames: {
            '#count': 'count',
            '#time': 'time',
            '#source': 'source',
            '#action': 'action',
          },
          ExpressionAttributeValues: {
            ':one': 1,
            ':bound': refusalsCounted,
            ':minute': minute,
            ':principal': refusal.by.principal,
            ':source': source,
            ':requestId': refusal.by.requestId,
            ':action': 'request.refused',
            ':target': refusal.route,
            ':outcome': `${refusal.status} ${refusal.code}`,
            ':subject': 'refused',
            ':expiresAt': Math.floor(Date.parse(now) / 1000) + this.#retentionDays * 24 * 3600,
            ':day': auditDayPartition(minute.slice(0, 10)),
            ':at': `${minute}#refused#${source}`,
          },
        }),
      );
    } catch {
      // Best effort: past the bound, or the store away; the refusal itself was answered.
    }
  }
}
