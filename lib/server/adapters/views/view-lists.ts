import { type DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { labelsPartOf } from '../../core/mesh/host-facts.ts';
import { matchesSelector } from '../../core/mesh/labels.ts';
import { askStore } from '../../core/unavailable.ts';
import type { ViewFilter } from '../../core/views/view-pages.ts';
import { allNodesIndex, labelsFrom, markedPartition, modulePartition } from '../dynamodb/mesh-items.ts';

/**
 * The lists of node names a page of a view walks, each sorted by name, so "after this node" is a
 * key range and a page is one Query per list however large the mesh:
 *
 * | filter      | list                                   | read |
 * |-------------|----------------------------------------|------|
 * | `behind`    | `mesh#marked` (base table)             | strongly consistent |
 * | `failed`    | gsi2 `view#failed` (sparse, keys only) | eventually consistent |
 * | `offline`   | gsi2 `view#offline` (sparse, keys only)| eventually consistent |
 * | `unhealthy` | gsi2 `view#unhealthy` (sparse, keys only) | eventually consistent |
 * | `module`    | `module#<m>`'s `carrier#<n>` items      | strongly consistent |
 * | none        | gsi1 `mesh#node` merged with `mesh#marked` | the index may lag; a node added a moment ago is marked |
 *
 * The report store keeps `view#failed` and `view#unhealthy` (report-store.ts: on the report and
 * the health item) and the presence store `view#offline` (presence-store.ts): the attributes are
 * set on the item only while the node is failed, unhealthy or offline, so the index holds those
 * nodes alone. Every name is checked
 * against the node's own partition before it is shown: a list that lags only costs a read.
 */
export const failedView = 'view#failed';
export const offlineView = 'view#offline';
export const unhealthyView = 'view#unhealthy';

type List = {
  readonly index?: 'gsi1' | 'gsi2';
  readonly pk: string;
  readonly pkValue: string;
  readonly sk: string;
  /** What the sort key holds before the node's name. */
  readonly skPrefix: string;
  readonly consistent: boolean;
};

const marked: List = { pk: 'pk', pkValue: markedPartition, sk: 'sk', skPrefix: '', consistent: true };

/** The list a filter walks: the narrowest the filter names, then the others are checked on each node. */
export function listsFor(filter: ViewFilter): readonly List[] {
  if (filter.behind) return [marked];
  if (filter.failed) return [sparse(failedView)];
  if (filter.offline) return [sparse(offlineView)];
  if (filter.unhealthy) return [sparse(unhealthyView)];
  if (filter.module)
    return [
      {
        pk: 'pk',
        pkValue: modulePartition(filter.module),
        sk: 'sk',
        skPrefix: 'carrier#',
        consistent: true,
      },
    ];
  const everyNode: List = {
    index: 'gsi1',
    pk: 'gsi1pk',
    pkValue: allNodesIndex,
    sk: 'gsi1sk',
    skPrefix: '',
    consistent: false,
  };
  return [everyNode, marked];
}

const sparse = (view: string): List => ({
  index: 'gsi2',
  pk: 'gsi2pk',
  pkValue: view,
  sk: 'gsi2sk',
  skPrefix: '',
  consistent: false,
});

export type Candidates = {
  /** Names to read, in order; those a label already rules out are left off. */
  readonly names: readonly string[];
  /** The last name looked at: the next look starts after it. */
  readonly last: string | null;
  /** How many names were looked at, those left off included. */
  readonly looked: number;
  /** Every list has been read to its end. */
  readonly done: boolean;
};

/**
 * Node names are DNS labels ([a-z0-9-]), so a space sorts below every character that can follow
 * a name and `~` above every one that can start one: "after n" is `n + ' '` and "any name" ends
 * at `~`.
 */
const afterName = (name: string) => `${name} `;
const endOfNames = '~';

/**
 * The next `count` names after `after` on the filter's lists, merged: each list answers its
 * first `count` names of the range, and the merge keeps only names up to the least last name of
 * a list that has more, so no name between is skipped.
 */
export async function nextCandidates(
  client: DynamoDBDocumentClient,
  tableName: string,
  filter: ViewFilter,
  after: string | undefined,
  count: number,
): Promise<Candidates> {
  const prefix = filter.prefix ?? '';
  const low = after !== undefined && afterName(after) > prefix ? afterName(after) : prefix || ' ';
  const high = `${prefix}${endOfNames}`;
  const answers = await Promise.all(
    listsFor(filter).map(async (list) => {
      const page = await askStore('the inventory table', () =>
        client.send(
          new QueryCommand({
            TableName: tableName,
            ...(list.index ? { IndexName: list.index } : {}),
            KeyConditionExpression: '#pk = :pk AND #sk BETWEEN :low AND :high',
            ExpressionAttributeNames: { '#pk': list.pk, '#sk': list.sk },
            ExpressionAttributeValues: {
              ':pk': list.pkValue,
              ':low': `${list.skPrefix}${low}`,
              ':high': `${list.skPrefix}${high}`,
            },
            Limit: count,
            ...(list.consistent ? { ConsistentRead: true } : {}),
          }),
        ),
      );
      const items = (page.Items ?? []).map((item) => ({
        name: String(item[list.sk]).slice(list.skPrefix.length),
        // Only gsi1 holds the node item itself, labels and all; elsewhere labels are read later.
        labels: list.index === 'gsi1' ? labelsFrom(item) : undefined,
      }));
      return { items, more: page.LastEvaluatedKey !== undefined && items.length > 0 };
    }),
  );
  let cut: string | null = null;
  for (const answer of answers) {
    const last = answer.items.at(-1)?.name;
    if (answer.more && last !== undefined && (cut === null || last < cut)) cut = last;
  }
  const seen = new Map<string, Record<string, string> | undefined>();
  for (const answer of answers)
    for (const item of answer.items)
      if (cut === null || item.name <= cut) seen.set(item.name, item.labels ?? seen.get(item.name));
  const sorted = [...seen.keys()].sort();
  const names = sorted.filter((name) => {
    const labels = seen.get(name);
    // The index's copy of the labels may lag the node item: a name it rules out is read anyway
    // only when no copy was seen, so a lagging copy can hide a node for as long as it lags.
    // Facts are not on the index: only the labels' part of the selector rules a name out here.
    return !filter.on || labels === undefined || matchesSelector(labelsPartOf(filter.on), labels);
  });
  return { names, looked: sorted.length, last: cut ?? sorted.at(-1) ?? null, done: cut === null };
}
