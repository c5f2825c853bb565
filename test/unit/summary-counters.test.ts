import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  contributionOf,
  countersOf,
  type Deltas,
  deltasOf,
  type Item,
  sumDeltas,
} from '../../lib/server/core/summary/counters.ts';
import { type Change, changesAfter, chunksOf, sequenceKey } from '../../lib/server/core/summary/stream.ts';
import { labelValuesShown, summaryFromFullRead, summaryOf } from '../../lib/server/core/summary/summary.ts';

/** Items as the stores write them in a node's partition, and some that count nothing. */
const node = fc.constantFrom('a', 'b', 'c');
const revision = fc.integer({ min: 0, max: 4 });
/** A report's modules: module to version, null for none. */
const reportModules = fc.dictionary(fc.constantFrom('app', 'db'), fc.constantFrom('1.0', '2.0', null));
const item: fc.Arbitrary<Item> = fc.oneof(
  node.map((n) => ({ pk: `node#${n}`, sk: 'node', node: n, createdAt: 't' })),
  fc
    .record({ n: node, labels: fc.dictionary(fc.constantFrom('role', 'zone'), fc.constantFrom('web', 'a')) })
    .map(({ n, labels }) => ({ pk: `node#${n}`, sk: 'node', node: n, createdAt: 't', labels })),
  node.map((n) => ({ pk: `node#${n}`, sk: 'enrolment', enrolledAt: 't' })),
  fc
    .record({ n: node, online: fc.boolean() })
    .map(({ n, online }) => ({ pk: `node#${n}`, sk: 'presence', online })),
  node.map((n) => ({ pk: `node#${n}`, sk: 'mark', marks: 1 })),
  fc
    .record({
      n: node,
      state: fc.constantFrom('applied', 'applying', 'failed', 'heartbeat'),
      revision,
      applied: fc.option(revision, { nil: undefined }),
      appliedModules: fc.option(reportModules, { nil: undefined }),
      failedModules: fc.option(reportModules, { nil: undefined }),
    })
    .map(({ n, state, revision, applied, appliedModules, failedModules }) => ({
      pk: `node#${n}`,
      sk: 'report',
      state,
      revision,
      ...(applied === undefined ? {} : { appliedRevision: applied }),
      ...(appliedModules === undefined ? {} : { appliedModules }),
      ...(failedModules === undefined ? {} : { failedModules }),
    })),
  fc
    .record({
      n: node,
      m: fc.constantFrom('app', 'db'),
      v: fc.option(fc.constantFrom('1.0', '2.0'), { nil: undefined }),
    })
    .map(({ n, m, v }) => ({ pk: `node#${n}`, sk: `module#${m}`, module: m, ...(v ? { version: v } : {}) })),
  node.map((n) => ({ pk: `node#${n}`, sk: 'delivery', revision: 1 })),
  fc.record({ n: node, relations: fc.integer({ min: 1, max: 40 }) }).map(({ n, relations }) => ({
    pk: `node#${n}`,
    sk: 'delivery',
    revision: 2,
    waitingRelations: relations,
    waitingNodes: 1,
    waitingFor: ['p'],
  })),
  node.map((n) => ({ pk: `node#${n}`, sk: 'token', tokenId: 'x' })),
  fc
    .record({
      n: node,
      agent: fc.constantFrom('1.4.0', '1.5.0'),
      os: fc.constantFrom('debian-12', 'rhel-9.4'),
    })
    .map(({ n, agent, os }) => ({ pk: `node#${n}`, sk: 'facts', agent, os, arch: 'x64', kernel: '6.1' })),
  fc
    .constantFrom('nodes', 'applied#1', 'version#app#1.0')
    .map((sk) => ({ pk: 'summary#counters', sk, count: 3 })),
  node.map((n) => ({ pk: 'mesh#marked', sk: n })),
);
const image = fc.option(item, { nil: undefined });

const asObject = (deltas: Deltas) => Object.fromEntries([...deltas].sort(([a], [b]) => (a < b ? -1 : 1)));
const keyOf = (i: Item) => `${String(i.pk)}|${String(i.sk)}`;

/**
 * A table as a map of key → item, changed by puts and deletes in order: each change's images
 * are the item before and after, exactly what a NEW_AND_OLD_IMAGES stream record carries.
 */
const writes = fc.array(fc.record({ put: fc.boolean(), item }), { maxLength: 60 });
function changesOf(ops: readonly { put: boolean; item: Item }[]) {
  const table = new Map<string, Item>();
  const changes: Change[] = [];
  ops.forEach((op, index) => {
    const key = keyOf(op.item);
    const before = table.get(key);
    const after = op.put ? op.item : undefined;
    if (after) table.set(key, after);
    else table.delete(key);
    if (before || after) changes.push({ sequence: String(100 + index * 7), before, after });
  });
  return { table, changes };
}

describe('deltasOf', () => {
  it('is what the new image counts less what the old one counted', () => {
    fc.assert(
      fc.property(image, image, (before, after) => {
        const deltas = deltasOf(before, after);
        const again = sumDeltas([deltasOf(undefined, after), deltasOf(before, undefined)]);
        expect(asObject(deltas)).toEqual(asObject(again));
      }),
    );
  });

  it('undoes itself: a change and its reverse move nothing', () => {
    fc.assert(
      fc.property(image, image, (before, after) => {
        expect(sumDeltas([deltasOf(before, after), deltasOf(after, before)]).size).toBe(0);
      }),
    );
  });

  it('moves nothing for an item written again unchanged, or for one outside a node partition', () => {
    fc.assert(
      fc.property(item, (i) => {
        expect(deltasOf(i, i).size).toBe(0);
        expect(deltasOf(undefined, { ...i, pk: 'summary#counters' }).size).toBe(0);
      }),
    );
  });

  it('moves each counter by at most one, and only the counters the item kind names; waiting relations by their count', () => {
    const waitingIn = (image: Item | undefined) =>
      image?.sk === 'delivery' && typeof image.waitingRelations === 'number' ? image.waitingRelations : 0;
    fc.assert(
      fc.property(image, image, (before, after) => {
        for (const [name, delta] of deltasOf(before, after)) {
          if (name === 'waiting-relations') {
            expect(delta).toBe(waitingIn(after) - waitingIn(before));
            continue;
          }
          expect(Math.abs(delta)).toBe(1);
          expect(name).toMatch(
            /^(nodes|enrolled|online|offline|behind|waiting-nodes|applied#\d+|failed#\d+|(applied-|failed-)?version#[a-z]+#[^#]+|agent#[^#]+|os#[^#]+|arch#[^#]+|label#[a-z]+#[^#]+)$/,
          );
        }
      }),
    );
  });

  it('counts each kind of item as the full read does', () => {
    expect(contributionOf({ pk: 'node#a', sk: 'node' })).toEqual(['nodes']);
    expect(contributionOf({ pk: 'node#a', sk: 'enrolment' })).toEqual(['enrolled']);
    expect(contributionOf({ pk: 'node#a', sk: 'presence', online: true })).toEqual(['online']);
    expect(contributionOf({ pk: 'node#a', sk: 'presence', online: false })).toEqual(['offline']);
    expect(contributionOf({ pk: 'node#a', sk: 'mark', marks: 2 })).toEqual(['behind']);
    expect(
      contributionOf({ pk: 'node#a', sk: 'report', state: 'failed', revision: 4, appliedRevision: 3 }),
    ).toEqual(['applied#3', 'failed#4']);
    expect(contributionOf({ pk: 'node#a', sk: 'report', state: 'heartbeat', revision: 0 })).toEqual([]);
    expect(
      contributionOf({
        pk: 'node#a',
        sk: 'report',
        state: 'failed',
        revision: 4,
        appliedRevision: 3,
        appliedModules: { app: '1.1', db: null },
        failedModules: { app: '1.2', db: null },
      }),
    ).toEqual([
      'applied#3',
      'failed#4',
      'applied-version#app#1.1',
      'applied-version#db#-',
      'failed-version#app#1.2',
      'failed-version#db#-',
    ]);
    // failed modules count only while the report is failed
    expect(
      contributionOf({
        pk: 'node#a',
        sk: 'report',
        state: 'applying',
        revision: 5,
        appliedModules: { app: '1.1' },
        failedModules: { app: '1.2' },
      }),
    ).toEqual(['applied-version#app#1.1']);
    expect(contributionOf({ pk: 'node#a', sk: 'module#app', version: '1.2' })).toEqual(['version#app#1.2']);
    expect(contributionOf({ pk: 'node#a', sk: 'module#app' })).toEqual(['version#app#-']);
    expect(contributionOf({ pk: 'module#app', sk: 'carrier#a', version: '1.2' })).toEqual([]);
  });
});

describe('the deltas of every change, summed', () => {
  it('equal the counters of the table that results, in any cut of runs', () => {
    fc.assert(
      fc.property(writes, fc.integer({ min: 1, max: 8 }), (ops, maxCounters) => {
        const { table, changes } = changesOf(ops);

        const chunks = chunksOf(changes, maxCounters);
        const summed = sumDeltas(chunks.map((chunk) => chunk.deltas));

        expect(asObject(summed)).toEqual(
          asObject(new Map([...countersOf(table.values())].filter(([, n]) => n !== 0))),
        );
        for (const chunk of chunks) expect(chunk.deltas.size).toBeLessThanOrEqual(maxCounters);
      }),
    );
  });

  it('cut a change that moves more counters than a transaction holds into parts, resumed where the watermark says', () => {
    const modules = (version: string) =>
      Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`m${i}`, version]));
    const before = {
      pk: 'node#a',
      sk: 'report',
      state: 'applied',
      revision: 1,
      appliedRevision: 1,
      appliedModules: modules('1'),
    };
    const after = { ...before, revision: 2, appliedRevision: 2, appliedModules: modules('2') };
    const change: Change = { sequence: '500', before, after };

    const whole = chunksOf([change], 99);
    const resumed = chunksOf(changesAfter([change], whole[0]?.mark), 99, whole[0]?.mark);

    expect(whole.map((chunk) => [chunk.deltas.size, chunk.mark, chunk.changes])).toEqual([
      [99, `${sequenceKey('500')}#0`, 1],
      [23, sequenceKey('500'), 0],
    ]);
    expect(asObject(sumDeltas(whole.map((chunk) => chunk.deltas)))).toEqual(
      asObject(deltasOf(before, after)),
    );
    expect(resumed).toEqual([{ ...whole[1], changes: 1 }]);
    expect(changesAfter([change], whole[1]?.mark)).toEqual([]);
  });

  it('are counted once when a batch comes again past the watermark, whole or halved', () => {
    fc.assert(
      fc.property(writes, fc.nat(), fc.nat({ max: 6 }), (ops, cut, stop) => {
        const { table, changes } = changesOf(ops);
        // what a shard's watermark does: each delivery applies only what is past it
        let watermark: string | undefined;
        const applied: Deltas[] = [];
        const deliver = (batch: readonly Change[], stopAfter = Number.POSITIVE_INFINITY) => {
          const fresh = changesAfter(batch, watermark);
          for (const chunk of chunksOf(fresh, 5, watermark).slice(0, stopAfter)) {
            applied.push(chunk.deltas);
            watermark = chunk.mark;
          }
        };
        const at = changes.length === 0 ? 0 : cut % changes.length;
        deliver(changes.slice(0, at));
        deliver(changes, stop); // the whole batch again, after its first part was counted, failing midway
        deliver(changes); // and again whole
        deliver(changes.slice(at)); // and its second half again, as a bisect hands it

        expect(asObject(sumDeltas(applied))).toEqual(
          asObject(new Map([...countersOf(table.values())].filter(([, n]) => n !== 0))),
        );
      }),
    );
  });
});

describe('sequenceKey', () => {
  it('orders sequence numbers of any length as numbers', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 40n }),
        fc.bigInt({ min: 0n, max: 10n ** 40n }),
        (a, b) => {
          expect(sequenceKey(String(a)) < sequenceKey(String(b))).toBe(a < b);
        },
      ),
    );
  });
});

describe('summaryOf', () => {
  it('lists revisions and module versions, leaving out what counts zero', () => {
    const summary = summaryOf(
      new Map([
        ['nodes', 3],
        ['online', 1],
        ['applied#2', 2],
        ['failed#3', 1],
        ['applied#1', 0],
        ['version#app#1.0', 2],
        ['version#app#-', 1],
        ['applied-version#app#1.0', 1],
        ['applied-version#app#0.9', 1],
        ['failed-version#app#1.0', 1],
        ['failed-version#db#2', 0],
        ['health#healthy', 1],
        ['health#unhealthy', 1],
        ['health#unknown', 0],
      ]),
      true,
    );

    expect(summary).toEqual({
      nodes: 3,
      enrolled: 0,
      online: 1,
      behind: 0,
      revisions: [
        { revision: 2, applied: 2, failed: 0 },
        { revision: 3, applied: 0, failed: 1 },
      ],
      modules: [
        { module: 'app', version: null, carriers: 1, applied: 0, failed: 0 },
        { module: 'app', version: '0.9', carriers: 0, applied: 1, failed: 0 },
        { module: 'app', version: '1.0', carriers: 2, applied: 1, failed: 1 },
      ],
      health: { healthy: 1, unhealthy: 1, unknown: 1 },
      exact: true,
    });
  });
});

describe('health', () => {
  const health = (state: string, node = 'web') => ({ pk: `node#${node}`, sk: 'health', state, check: true });

  it('counts each node once by the state its host last reported, and moves it when the state changes', () => {
    expect(
      asObject(countersOf([health('healthy'), health('unhealthy', 'api'), health('unknown', 'db')])),
    ).toEqual({ 'health#healthy': 1, 'health#unhealthy': 1, 'health#unknown': 1 });
    expect(asObject(deltasOf(health('healthy'), health('unhealthy')))).toEqual({
      'health#healthy': -1,
      'health#unhealthy': 1,
    });
    expect(asObject(deltasOf(health('unhealthy'), health('unhealthy')))).toEqual({});
    expect(asObject(deltasOf(health('unhealthy'), undefined))).toEqual({ 'health#unhealthy': -1 });
    expect(contributionOf({ ...health('broken') })).toEqual([]);
    expect(contributionOf({ ...health('healthy'), pk: 'mesh#marked' })).toEqual([]);
  });

  it('says unknown for every node not counted healthy or unhealthy, reported so or not at all', () => {
    const summary = summaryOf(
      new Map([
        ['nodes', 5],
        ['health#healthy', 2],
        ['health#unhealthy', 1],
        ['health#unknown', 1],
      ]),
      true,
    );
    expect(summary.health).toEqual({ healthy: 2, unhealthy: 1, unknown: 2 });
  });
});

describe('facts', () => {
  const facts = (n: string, agent: string, os: string, arch = 'x64') => ({
    pk: `node#${n}`,
    sk: 'facts',
    agent,
    os,
    arch,
  });

  it('count each node once by the agent, the OS and the architecture its host last said, and move it when they change', () => {
    expect(contributionOf(facts('a', '1.4.0', 'debian-12'))).toEqual([
      'agent#1.4.0',
      'os#debian-12',
      'arch#x64',
    ]);
    expect(asObject(deltasOf(facts('a', '1.4.0', 'debian-12'), facts('a', '1.5.0', 'debian-12')))).toEqual({
      'agent#1.4.0': -1,
      'agent#1.5.0': 1,
    });
  });

  it('are in the summary most nodes first, only when some host said them', () => {
    const counters = countersOf([
      facts('a', '1.4.0', 'debian-12'),
      facts('b', '1.5.0', 'debian-12'),
      facts('c', '1.5.0', 'rhel-9.4', 'arm64'),
    ]);
    const summary = summaryOf(counters, true);
    expect(summary.architectures).toEqual([
      { value: 'x64', nodes: 2 },
      { value: 'arm64', nodes: 1 },
    ]);
    expect(summary.agents).toEqual([
      { value: '1.5.0', nodes: 2 },
      { value: '1.4.0', nodes: 1 },
    ]);
    expect(summary.systems).toEqual([
      { value: 'debian-12', nodes: 2 },
      { value: 'rhel-9.4', nodes: 1 },
    ]);
    expect(summaryOf(countersOf([{ pk: 'node#a', sk: 'node' }]), true)).not.toHaveProperty('agents');
  });
});

/** A node as status shows it, with nothing reported. */
const bareStatus = (node: string) => ({
  node,
  enrolled: false,
  enrolledAt: null,
  sentRevision: null,
  sentAt: null,
  appliedRevision: null,
  appliedAt: null,
  reportState: null,
  behind: false,
  online: null,
  lastHeard: null,
});

describe('labels', () => {
  const labelled = (n: string, labels: Record<string, string>) => ({ pk: `node#${n}`, sk: 'node', labels });

  it('count each node once by each of its labels, and move it when they change', () => {
    expect(contributionOf(labelled('a', { role: 'web', zone: 'a' }))).toEqual([
      'nodes',
      'label#role#web',
      'label#zone#a',
    ]);
    expect(
      asObject(deltasOf(labelled('a', { role: 'web', zone: 'a' }), labelled('a', { role: 'db', zone: 'a' }))),
    ).toEqual({ 'label#role#db': 1, 'label#role#web': -1 });
  });

  it('are in the summary by key, most nodes first, the values past the shown ones summed, and agree with a full read', () => {
    const nodes = Array.from({ length: labelValuesShown + 3 }, (_, i) =>
      labelled(`n${i}`, { host: `h${i}`, role: i % 3 === 0 ? 'db' : 'web' }),
    );
    const summary = summaryOf(countersOf(nodes), true);
    expect(summary.labels?.map((l) => l.key)).toEqual(['host', 'role']);
    const role = summary.labels?.[1];
    expect(role).toEqual({
      key: 'role',
      values: [
        { value: 'web', nodes: 35 },
        { value: 'db', nodes: 18 },
      ],
    });
    const host = summary.labels?.[0];
    expect(host?.values).toHaveLength(labelValuesShown);
    expect(host).toMatchObject({ otherValues: 3, otherNodes: 3 });
    const statuses = nodes.map((n, i) => ({ ...bareStatus(`n${i}`), labels: n.labels }));
    expect(summaryFromFullRead(statuses, [], () => null).labels).toEqual(summary.labels);
    expect(summaryOf(countersOf([{ pk: 'node#a', sk: 'node' }]), true)).not.toHaveProperty('labels');
  });
});

describe('relations waiting for an enrolment', () => {
  const delivery = (waitingRelations?: number) => ({
    pk: 'node#web',
    sk: 'delivery',
    revision: 3,
    ...(waitingRelations === undefined ? {} : { waitingRelations, waitingNodes: 1, waitingFor: ['db'] }),
  });

  it('count the node once and each of its waiting relations, moved by what a send changes', () => {
    expect(asObject(countersOf([delivery(3), delivery(), { ...delivery(2), pk: 'node#api' }]))).toEqual({
      'waiting-nodes': 2,
      'waiting-relations': 5,
    });
    expect(asObject(deltasOf(delivery(3), delivery(1)))).toEqual({ 'waiting-relations': -2 });
    expect(asObject(deltasOf(delivery(2), delivery()))).toEqual({
      'waiting-nodes': -1,
      'waiting-relations': -2,
    });
    expect(asObject(deltasOf(undefined, delivery(4)))).toEqual({
      'waiting-nodes': 1,
      'waiting-relations': 4,
    });
    expect(asObject(deltasOf(delivery(4), undefined))).toEqual({
      'waiting-nodes': -1,
      'waiting-relations': -4,
    });
  });

  it('are in the summary only when some wait, and agree with a full read of the rows', () => {
    const counted = countersOf([delivery(3), { pk: 'node#web', sk: 'node' }]);
    const row = {
      node: 'web',
      enrolled: false,
      enrolledAt: null,
      sentRevision: 3,
      sentAt: null,
      appliedRevision: null,
      appliedAt: null,
      reportState: null,
      behind: false,
      online: null,
      lastHeard: null,
    };

    expect(summaryOf(counted, true).waiting).toEqual({ nodes: 1, relations: 3 });
    expect(
      summaryFromFullRead([{ ...row, waiting: { relations: 3, nodes: 1, for: ['db'] } }], [], () => null),
    ).toEqual(summaryOf(counted, true));
    expect(Object.keys(summaryOf(countersOf([delivery()]), true))).not.toContain('waiting');
    expect(Object.keys(summaryFromFullRead([row], [], () => null))).not.toContain('waiting');
  });
});
