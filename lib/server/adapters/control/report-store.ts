import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { type Actor, nodeEntry } from '../../core/audit/record.ts';
import {
  ReportBeforeNodeError,
  RevisionNotSentError,
  StaleReportError,
  UnknownNodeError,
} from '../../core/control/errors.ts';
import type { ReportBody } from '../../core/control/messages.ts';
import type { RecordedReport, ReportRecorded, ReportStore, ReportTimes } from '../../core/control/ports.ts';
import { noVersion } from '../../core/summary/counters.ts';
import { askStore, StoreUnavailableError } from '../../core/unavailable.ts';
import { AuditedTableStore } from '../audit/audit-trail.ts';
import { healthItemKey, nodeItemKey, reportItemKey } from '../dynamodb/keys.ts';
import { deliveryKey } from '../dynamodb/mesh-items.ts';
import { itemAbsent, itemPresent, type TransactItem, transact } from '../dynamodb/requests.ts';
import { failedView } from '../views/view-lists.ts';
import { factsWrite } from './facts-items.ts';
import { healthWrite } from './health-items.ts';

/**
 * A node's latest report, in the inventory table:
 *
 * | pk          | sk       | attributes |
 * |-------------|----------|------------|
 * | `node#<n>`  | `report` | sequence (N), state, revision (N), step?, sentAt, heardAt, appliedRevision? (N), appliedAt?, appliedModules? (M of module to version, `-` for none), failedModules? (M), gsi2pk/gsi2sk (`view#failed` / `<n>`, only while failed), revertedFrom? (N), revertedTo? (N), revertCause?, revertOk? (BOOL), revertedAt? (while the last report that is not a heartbeat was a revert) |
 *
 * The report's health goes in the node's `health` item in the same transaction (health-items.ts),
 * and its facts in the `facts` item (facts-items.ts).
 * A revert (a failed report with `revert`) moves the applied revision back to the one the host
 * applied again, and is audited (`node.revert`) in the same transaction.
 *
 * Access: one transaction per report: the node's item checked to exist and to be older than the
 * report's time on the queue (a report about an earlier node of the same name, removed since,
 * is refused, so a node added again inherits nothing); its delivery checked to have reached the
 * revision the report names (a heartbeat's revision 0 names none); and the report item updated
 * when the report is newer ("newer wins" on the host's sequence). `mesh status` reads it with
 * the node's other items. A heartbeat moves sequence, sentAt and heardAt but keeps the state
 * and revision of the last real report, so status still shows what was applied.
 * appliedRevision/appliedAt are the last report whose state was `applied`, appliedModules the
 * modules (module to version) that report named; failedModules those a report `failed` named,
 * kept only while the state is failed. A reset deletes the item in one transaction with its
 * audit record (audit-trail.ts). `mesh report reset`
 * deletes the item.
 */
const nodeExists = itemPresent;
const addedBeforeQueued = 'createdAt <= :queuedAt';
const revisionSent = 'revision >= :revision';
const noReportYet = itemAbsent;
const olderSequenceKept = '#sequence < :sequence';
const newerWins = `${noReportYet} OR ${olderSequenceKept}`;
const sameReport = '#sequence = :seen';

export class DynamoDBReportStore extends AuditedTableStore implements ReportStore {
  async recordReport(report: ReportBody, times: ReportTimes, by?: Actor): Promise<ReportRecorded> {
    const namesRevision = report.state !== 'heartbeat' || report.revision > 0;
    const checks: TransactItem[] = [
      {
        ConditionCheck: {
          TableName: this.tableName,
          Key: nodeItemKey(report.node),
          ConditionExpression: `${nodeExists} AND ${addedBeforeQueued}`,
          ExpressionAttributeValues: { ':queuedAt': times.queuedAt },
        },
      },
      ...(namesRevision
        ? [
            {
              ConditionCheck: {
                TableName: this.tableName,
                Key: deliveryKey(report.node),
                ConditionExpression: revisionSent,
                ExpressionAttributeValues: { ':revision': report.revision },
              },
            },
          ]
        : []),
    ];
    const writes = [
      ...checks,
      this.#update(report, times.heardAt),
      ...healthWrite(this.tableName, report, times.heardAt),
      ...factsWrite(this.tableName, report),
    ];
    const failed = report.revert
      ? await this.audit.transact('recording a report', writes, revertEntry(report, by))
      : await transact(this.client, 'recording a report', writes);
    if (!failed)
      return {
        turnedUnhealthy: report.health?.state === 'unhealthy' && (await this.#unhealthyFrom(report, times)),
      };
    const [node, delivery] = failed;
    if (node) {
      const createdAt = node.old?.createdAt;
      if (typeof createdAt !== 'string') throw new UnknownNodeError(report.node);
      throw new ReportBeforeNodeError(report.node, times.queuedAt, createdAt);
    }
    if (namesRevision && delivery) {
      const sent = delivery.old?.revision;
      throw new RevisionNotSentError(
        report.node,
        report.revision,
        typeof sent === 'number' ? sent : undefined,
      );
    }
    const kept = failed[checks.length]?.old;
    throw new StaleReportError(report.node, report.sequence, Number(kept?.sequence ?? Number.NaN));
  }

  /**
   * The report read, then deleted on the condition it is still the one read (`sameReport`), with
   * the reset's audit record; a report that came in between is read again. Nothing to forget
   * writes nothing.
   */
  async resetReport(node: string, by: Actor): Promise<RecordedReport | undefined> {
    const read = (key: { pk: string; sk: string }) =>
      askStore('resetting a report', () =>
        this.client.send(new GetCommand({ TableName: this.tableName, Key: key, ConsistentRead: true })),
      );
    if (!(await read(nodeItemKey(node))).Item) throw new UnknownNodeError(node);
    for (let race = 0; race < 3; race += 1) {
      const { Item: kept } = await read(reportItemKey(node));
      if (!kept) return undefined;
      const failed = await this.audit.transact(
        'resetting a report',
        [
          {
            Delete: {
              TableName: this.tableName,
              Key: reportItemKey(node),
              ConditionExpression: sameReport,
              ExpressionAttributeNames: { '#sequence': 'sequence' },
              ExpressionAttributeValues: { ':seen': kept.sequence },
            },
          },
        ],
        nodeEntry(by, 'report.reset', node, { details: { sequence: Number(kept.sequence) } }),
      );
      if (failed) continue;
      const { pk: _pk, sk: _sk, gsi2pk: _gsi2pk, gsi2sk: _gsi2sk, ...report } = kept;
      return { node, ...report } as RecordedReport;
    }
    throw new StoreUnavailableError(`resetting the report of ${node}: new reports keep coming in`);
  }

  /**
   * Whether the node has been unhealthy only since this report: its health item's
   * `unhealthySince` is kept while reports say so again (health-items.ts), so it is this report's
   * time only when it turned the node unhealthy. One read, for unhealthy reports only; the report
   * is recorded whatever it answers, so a store away here answers no.
   */
  async #unhealthyFrom(report: ReportBody, times: ReportTimes): Promise<boolean> {
    try {
      const { Item } = await askStore('reading a node health', () =>
        this.client.send(
          new GetCommand({
            TableName: this.tableName,
            Key: healthItemKey(report.node),
            ProjectionExpression: 'unhealthySince',
            ConsistentRead: true,
          }),
        ),
      );
      return Item?.unhealthySince === times.heardAt;
    } catch {
      return false;
    }
  }

  #update(report: ReportBody, heardAt: string): TransactItem {
    const heartbeat = report.state === 'heartbeat';
    const modules = keptModules(report.modules);
    const sets = ['#sequence = :sequence', 'sentAt = :sentAt', 'heardAt = :heardAt'];
    const removes: string[] = [];
    if (heartbeat) {
      sets.push('#state = if_not_exists(#state, :state)', 'revision = if_not_exists(revision, :revision)');
    } else {
      sets.push('#state = :state', 'revision = :revision');
      if (report.step !== undefined) sets.push('step = :step');
      else removes.push('step');
      if (report.state === 'applied') sets.push('appliedRevision = :revision', 'appliedAt = :heardAt');
      // What the summary counts per module version (core/summary/counters.ts): the modules of the
      // revision last applied, and of the one failed while it is failed.
      if (report.state === 'applied' && modules) sets.push('appliedModules = :modules');
      else if (report.state === 'applied') removes.push('appliedModules');
      if (report.state === 'failed' && modules) sets.push('failedModules = :modules');
      else removes.push('failedModules');
      // On gsi2's failed list while failed, off it otherwise (view-lists.ts).
      if (report.state === 'failed') sets.push('gsi2pk = :failedView', 'gsi2sk = :node');
      else removes.push('gsi2pk', 'gsi2sk');
      const revert = report.revert;
      if (revert) {
        sets.push(
          'revertedFrom = :revision',
          'revertedTo = :revertedTo',
          'revertCause = :revertCause',
          'revertOk = :revertOk',
          'revertedAt = :heardAt',
        );
        // What the host runs now is the revision it applied again.
        if (revert.ok) sets.push('appliedRevision = :revertedTo', 'appliedAt = :heardAt');
        const again = keptModules(revert.modules);
        if (revert.ok && again) sets.push('appliedModules = :revertedModules');
        else if (revert.ok) removes.push('appliedModules');
      } else removes.push('revertedFrom', 'revertedTo', 'revertCause', 'revertOk', 'revertedAt');
    }
    return {
      Update: {
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
          ...(modules && (report.state === 'applied' || report.state === 'failed')
            ? { ':modules': modules }
            : {}),
          ...(report.state === 'failed' ? { ':failedView': failedView, ':node': report.node } : {}),
          ...(report.revert
            ? {
                ':revertedTo': report.revert.to,
                ':revertCause': report.revert.cause,
                ':revertOk': report.revert.ok,
                ...(report.revert.ok && keptModules(report.revert.modules)
                  ? { ':revertedModules': keptModules(report.revert.modules) }
                  : {}),
              }
            : {}),
        },
      },
    };
  }
}

/** The audit record of a revert: the host's own act, on its node's chain. */
function revertEntry(report: ReportBody, by: Actor | undefined) {
  const revert = report.revert;
  return nodeEntry(
    by ?? {
      principal: `node:${report.node}`,
      source: 'control-queue',
      requestId: `report-${report.sequence}`,
    },
    'node.revert',
    report.node,
    {
      outcome: revert?.ok ? 'done' : 'failed',
      details: {
        from: report.revision,
        to: revert?.to ?? 0,
        cause: revert?.cause ?? 'failed',
        ...(report.step ? { step: report.step } : {}),
      },
    },
  );
}

/**
 * A report's modules as kept: each version a string, `-` for none, as the summary's counters name
 * it. A report naming no module keeps none (the local stream reader cannot read an empty map back).
 */
function keptModules(
  modules: Readonly<Record<string, string | null>> | undefined,
): Record<string, string> | undefined {
  const entries = Object.entries(modules ?? {});
  if (entries.length === 0) return undefined;
  return Object.fromEntries(entries.map(([module, version]) => [module, version ?? noVersion]));
}
