import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { StaleReportError } from '../../core/control/errors.ts';
import type { ReportBody } from '../../core/control/messages.ts';
import type { ReportStore } from '../../core/control/ports.ts';
import { askStore } from '../../core/unavailable.ts';
import { reportItemKey } from './keys.ts';
import { allOld, conditionFailed, itemAbsent, TableStore } from './requests.ts';

/**
 * A node's latest report, in the inventory table:
 *
 * | pk          | sk       | attributes |
 * |-------------|----------|------------|
 * | `node#<n>`  | `report` | sequence (N), state, revision (N), step?, sentAt, heardAt, appliedRevision? (N), appliedAt? |
 *
 * Access: one conditional UpdateItem per report ("newer wins" on the host's sequence); `mesh
 * status` reads it with the node's other items. A heartbeat moves sequence, sentAt and heardAt
 * but keeps the state and revision of the last real report, so status still shows what was
 * applied. appliedRevision/appliedAt are the last report whose state was `applied`.
 */
const noReportYet = itemAbsent;
const olderSequenceKept = '#sequence < :sequence';
const newerWins = `${noReportYet} OR ${olderSequenceKept}`;

export class DynamoDBReportStore extends TableStore implements ReportStore {
  async recordReport(report: ReportBody, heardAt: string): Promise<void> {
    const heartbeat = report.state === 'heartbeat';
    const sets = ['#sequence = :sequence', 'sentAt = :sentAt', 'heardAt = :heardAt'];
    const removes: string[] = [];
    if (heartbeat) {
      sets.push('#state = if_not_exists(#state, :state)', 'revision = if_not_exists(revision, :revision)');
    } else {
      sets.push('#state = :state', 'revision = :revision');
      if (report.step !== undefined) sets.push('step = :step');
      else removes.push('step');
      if (report.state === 'applied') sets.push('appliedRevision = :revision', 'appliedAt = :heardAt');
    }
    try {
      await askStore('recording a report', () =>
        this.client.send(
          new UpdateCommand({
            TableName: this.tableName,
            Key: reportItemKey(report.node),
            UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
            ConditionExpression: newerWins,
            ExpressionAttributeNames: { '#sequence': 'sequence', '#state': 'state' },
            ExpressionAttributeValues: {
              ':sequence': report.sequence,
              ':sentAt': report.sentAt,
              ':heardAt': heardAt,
              ':state': report.state,
              ':revision': report.revision,
              ...(!heartbeat && report.step !== undefined ? { ':step': report.step } : {}),
            },
            ...allOld,
          }),
        ),
      );
    } catch (error) {
      const failed = conditionFailed(error);
      if (!failed) throw error;
      throw new StaleReportError(report.node, report.sequence, Number(failed.old?.sequence ?? Number.NaN));
    }
  }
}
