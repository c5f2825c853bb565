/**
 * The summary's counters (docs/decisions/summary-from-the-stream.md): what each item of a node's
 * partition adds to the counts of the mesh, so that a change of one item moves the counters by
 * what it added before and adds now. Pure; the stream aggregator
 * (lib/server/adapters/summary/summary-store.ts) sums a batch's deltas and a rebuild sums every item's
 * contribution.
 *
 * | item (sort key, in `node#<n>`) | counter | when |
 * |---|---|---|
 * | `node`        | `nodes`                     | always |
 * | `enrolment`   | `enrolled`                  | always |
 * | `presence`    | `online`                    | online is true |
 * | `presence`    | `offline`                   | online is false (its host's connection is down) |
 * | `mark`        | `behind`                    | always |
 * | `report`      | `applied#<revision>`        | appliedRevision is a number |
 * | `report`      | `failed#<revision>`         | state is `failed` and revision a number |
 * | `report`      | `applied-version#<m>#<version>` | each module of appliedModules (the modules the last `applied` report named) |
 * | `report`      | `failed-version#<m>#<version>`  | state is `failed`: each module of failedModules |
 * | `module#<m>`  | `version#<m>#<version>`     | always; an assignment without a version counts under `-` |
 * | `delivery`    | `waiting-nodes`             | waitingRelations is over 0 (relations wait for an enrolment, as last sent) |
 * | `delivery`    | `waiting-relations`         | adds waitingRelations, not 1 |
 * | `health`      | `health#<state>`            | state is `healthy`, `unhealthy` or `unknown` (the host's last report of its health) |
 * | `facts`       | `agent#<version>`, `os#<os>`, `arch#<arch>` | each a text (what the host last said of its machine) |
 * | `node`        | `label#<key>#<value>`       | each of its labels (keys and values never hold `#`) |
 *
 * Every other item, and every item outside a node's partition (the counters themselves among
 * them), counts nothing. The sum agrees with a full read because the stores write a node's other
 * items only while its node item exists and remove them with it (status-reader.ts reads a
 * partition without its node item as no node).
 */
export type Item = Readonly<Record<string, unknown>>;

/** A counter's name, as its item's sort key: `nodes`, `applied#3`, `version#app#1.2.0`. */
export type CounterName = string;
export type Deltas = ReadonlyMap<CounterName, number>;

export const noVersion = '-';

const nodePartitionPrefix = 'node#';

/** The counters one item adds 1 to; none for an item nothing counts. */
export function contributionOf(item: Item | undefined): CounterName[] {
  if (!item || typeof item.pk !== 'string' || !item.pk.startsWith(nodePartitionPrefix)) return [];
  const sk = item.sk;
  if (typeof sk !== 'string') return [];
  switch (sk) {
    case 'node':
      return ['nodes', ...labelsIn(item.labels).map(([key, value]) => `label#${key}#${value}`)];
    case 'enrolment':
      return ['enrolled'];
    case 'presence':
      return item.online === true ? ['online'] : item.online === false ? ['offline'] : [];
    case 'mark':
      return ['behind'];
    case 'delivery':
      return waitingRelationsIn(item) > 0 ? [waitingNodes] : [];
    case 'health':
      return typeof item.state === 'string' && healthCounted.has(item.state) ? [`health#${item.state}`] : [];
    case 'facts':
      return [
        ...(typeof item.agent === 'string' ? [`agent#${item.agent}`] : []),
        ...(typeof item.os === 'string' ? [`os#${item.os}`] : []),
        ...(typeof item.arch === 'string' ? [`arch#${item.arch}`] : []),
      ];
    case 'report':
      return [
        ...(isRevision(item.appliedRevision) ? [`applied#${item.appliedRevision}`] : []),
        ...(item.state === 'failed' && isRevision(item.revision) ? [`failed#${item.revision}`] : []),
        ...versionsIn(item.appliedModules).map(([module, version]) => `applied-version#${module}#${version}`),
        ...(item.state === 'failed'
          ? versionsIn(item.failedModules).map(([module, version]) => `failed-version#${module}#${version}`)
          : []),
      ];
    default: {
      if (!sk.startsWith('module#')) return [];
      const module = sk.slice('module#'.length);
      const version = typeof item.version === 'string' ? item.version : noVersion;
      return [`version#${module}#${version}`];
    }
  }
}

/** A report's modules (module to version, null for none), as counter parts: `-` for no version. */
function versionsIn(modules: unknown): Array<[string, string]> {
  if (!modules || typeof modules !== 'object') return [];
  return Object.entries(modules as Record<string, unknown>).map(([module, version]) => [
    module,
    typeof version === 'string' ? version : noVersion,
  ]);
}

/** A node item's labels, as counter parts: only text values, as labelsFrom reads them. */
function labelsIn(labels: unknown): Array<[string, string]> {
  if (!labels || typeof labels !== 'object') return [];
  return Object.entries(labels as Record<string, unknown>).filter(
    (entry): entry is [string, string] => typeof entry[1] === 'string',
  );
}

const healthCounted: ReadonlySet<string> = new Set(['healthy', 'unhealthy', 'unknown']);

export const waitingNodes = 'waiting-nodes';
export const waitingRelations = 'waiting-relations';

/** What a delivery item adds to `waiting-relations`: its count of waiting relations, not 1. */
function waitingRelationsIn(item: Item | undefined): number {
  const count = item?.sk === 'delivery' ? item.waitingRelations : undefined;
  return typeof count === 'number' && Number.isInteger(count) && count > 0 ? count : 0;
}

/** Every counter one item moves, by how much: its contribution, 1 each, and its waiting relations. */
function weightsOf(item: Item | undefined): Array<[CounterName, number]> {
  const names = contributionOf(item);
  const waiting = names.includes(waitingNodes) ? waitingRelationsIn(item) : 0;
  return [
    ...names.map((name): [CounterName, number] => [name, 1]),
    ...(waiting ? [[waitingRelations, waiting] as [CounterName, number]] : []),
  ];
}

const isRevision = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0;

/** What one change (an item's image before and after; absent when it did not or no longer exists) moves. */
export function deltasOf(before: Item | undefined, after: Item | undefined): Deltas {
  const deltas = new Map<CounterName, number>();
  for (const [name, weight] of weightsOf(before)) deltas.set(name, (deltas.get(name) ?? 0) - weight);
  for (const [name, weight] of weightsOf(after)) deltas.set(name, (deltas.get(name) ?? 0) + weight);
  return withoutZeros(deltas);
}

/** Many changes' deltas as one: what a batch applies, one update per counter. */
export function sumDeltas(all: Iterable<Deltas>): Deltas {
  const sum = new Map<CounterName, number>();
  for (const deltas of all) for (const [name, delta] of deltas) sum.set(name, (sum.get(name) ?? 0) + delta);
  return withoutZeros(sum);
}

/** Every item's contribution summed: the counters a full read gives (the rebuild's). */
export function countersOf(items: Iterable<Item>): Deltas {
  const sum = new Map<CounterName, number>();
  for (const item of items)
    for (const [name, weight] of weightsOf(item)) sum.set(name, (sum.get(name) ?? 0) + weight);
  return sum;
}

function withoutZeros(deltas: Map<CounterName, number>): Deltas {
  for (const [name, delta] of deltas) if (delta === 0) deltas.delete(name);
  return deltas;
}
