import type { ReportBody } from '../../core/control/messages.ts';
import type { HealthState } from '../../core/health.ts';
import { healthItemKey } from '../dynamodb/keys.ts';
import type { TransactItem } from '../dynamodb/requests.ts';
import { unhealthyView } from '../views/view-lists.ts';

/**
 * A node's health, in the inventory table:
 *
 * | pk          | sk       | attributes |
 * |-------------|----------|------------|
 * | `node#<n>`  | `health` | state (`healthy`, `unhealthy`, `unknown`), check (BOOL), revision (N), checkedAt?, reason?, applyOutput?, checkOutput?, heardAt, healthySince?/unhealthySince?/unknownSince? (only the one of its state), gsi2pk/gsi2sk (`view#unhealthy` / `<n>`, only while unhealthy) |
 *
 * The health item is written in the report's transaction whenever the report carries health
 * (hosts since health always do), so it is as new as the report; an `applied` report without
 * health (a host from before) deletes it: nothing is known of that revision's health. Its
 * `<state>Since` is set the first time a report says that state and kept while reports say it
 * again (`if_not_exists`, the others removed), so it says, by the control plane's clock, since
 * when the node has been so: a rollout counts a node of an earlier wave that turned unhealthy
 * after its wave ended (rollout-facts.ts). A report reset (`mesh report reset`) leaves it: the
 * next report writes it whole.
 */

/** The attribute saying since when a node's health has been in each state. */
const sinceOf: Readonly<Record<HealthState, string>> = {
  healthy: 'healthySince',
  unhealthy: 'unhealthySince',
  unknown: 'unknownSince',
};

/**
 * The health item's write: the whole item as the report says it, keeping only the `since` of its
 * state, on gsi2's unhealthy list while unhealthy (view-lists.ts); its deletion on an `applied`
 * report without health. Unconditional: the transaction holds only when the report is newer.
 */
export function healthWrite(tableName: string, report: ReportBody, heardAt: string): TransactItem[] {
  const { health, output } = report;
  const Key = healthItemKey(report.node);
  if (!health) return report.state === 'applied' ? [{ Delete: { TableName: tableName, Key } }] : [];
  const optional = {
    checkedAt: health.checkedAt,
    reason: health.reason,
    applyOutput: output?.apply,
    checkOutput: output?.check,
  };
  const since = sinceOf[health.state];
  const sets = [
    '#state = :state',
    '#check = :check',
    'revision = :revision',
    'heardAt = :heardAt',
    `${since} = if_not_exists(${since}, :heardAt)`,
    ...Object.entries(optional)
      .filter(([, value]) => value !== undefined)
      .map(([name]) => `${name} = :${name}`),
  ];
  const removes = [
    ...Object.values(sinceOf).filter((name) => name !== since),
    ...Object.entries(optional)
      .filter(([, value]) => value === undefined)
      .map(([name]) => name),
  ];
  const unhealthy = health.state === 'unhealthy';
  if (unhealthy) sets.push('gsi2pk = :unhealthyView', 'gsi2sk = :node');
  else removes.push('gsi2pk', 'gsi2sk');
  return [
    {
      Update: {
        TableName: tableName,
        Key,
        UpdateExpression: `SET ${sets.join(', ')} REMOVE ${removes.join(', ')}`,
        ExpressionAttributeNames: { '#state': 'state', '#check': 'check' },
        ExpressionAttributeValues: {
          ':state': health.state,
          ':check': health.check,
          ':revision': health.revision,
          ':heardAt': heardAt,
          ...Object.fromEntries(
            Object.entries(optional)
              .filter(([, value]) => value !== undefined)
              .map(([name, value]) => [`:${name}`, value]),
          ),
          ...(unhealthy ? { ':unhealthyView': unhealthyView, ':node': report.node } : {}),
        },
      },
    },
  ];
}
