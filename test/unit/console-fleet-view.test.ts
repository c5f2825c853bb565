import { describe, expect, it } from 'vitest';
import type { Summary } from '../../lib/server/core/summary/summary.ts';
import type { ListedNode, MeshEdge, NodeDetails } from '../../lib/server/core/views/views.ts';

// Loaded by URL with the types their JSDoc declares, as console-fleet.test.ts loads fleet.js.
type Tile = {
  id: string;
  title: string;
  count: number | null;
  filter?: Record<string, string>;
  rollout?: string;
};
const { tilesOf, tableRoute, sortRows, stateOf } = (await import(
  new URL('../../lib/clients/cli/console/assets/fleet-view.js', import.meta.url).href
)) as {
  tilesOf(summary: Summary, grouping: string): Tile[];
  tableRoute(filter: Record<string, string | undefined>, cursor: string | null): string;
  sortRows(rows: ListedNode[], key: string, dir: 1 | -1): ListedNode[];
  stateOf(node: ListedNode): { state: string; text: string };
};
const { columnsOf } = (await import(
  new URL('../../lib/clients/cli/console/assets/neighbourhood.js', import.meta.url).href
)) as {
  columnsOf(center: NodeDetails, around: ReadonlyMap<string, NodeDetails>): { columns: string[][] };
};

const summary: Summary = {
  nodes: 1000,
  enrolled: 990,
  online: 950,
  offline: 30,
  behind: 40,
  revisions: [{ revision: 3, applied: 900, failed: 7 }],
  modules: [
    { module: 'web', version: '1.0', carriers: 0, applied: 20, failed: 0 },
    { module: 'web', version: '1.1', carriers: 600, applied: 580, failed: 5 },
  ],
  health: { healthy: 900, unhealthy: 3, unknown: 97 },
  agents: [{ value: '0.3.0', nodes: 990 }],
  labels: [{ key: 'role', values: [{ value: 'web', nodes: 600 }], otherValues: 2, otherNodes: 100 }],
  heldBack: {
    rollouts: [{ id: 'r1', state: 'halted', notSent: 12 }],
    freezes: [{ on: 'zone=a', reason: 'x' }],
  },
  exact: true,
};

const listed = (node: string, over: Partial<ListedNode> = {}): ListedNode => ({
  node,
  enrolled: true,
  enrolledAt: null,
  sentRevision: 1,
  sentAt: null,
  appliedRevision: 1,
  appliedAt: null,
  reportState: 'applied',
  behind: false,
  online: true,
  lastHeard: null,
  modules: [],
  presence: 'online',
  relations: { consumes: 0, consumedBy: 0 },
  ...over,
});

describe('the fleet view’s tiles', () => {
  it('count states from the summary, each with the filter the table asks the server for', () => {
    const tiles = new Map(tilesOf(summary, 'state').map((t) => [t.id, t]));
    expect(tiles.get('current')).toMatchObject({ count: 960, filter: { state: 'current' } });
    expect(tiles.get('failed')).toMatchObject({ count: 7, filter: { state: 'failed' } });
    expect(tiles.get('offline')).toMatchObject({ count: 30, filter: { state: 'offline' } });
    expect(tiles.get('unenrolled')).toMatchObject({ count: 10, filter: { state: 'unenrolled' } });
    expect(tiles.get('held')).toMatchObject({ count: 12 });
  });

  it('count a module’s carriers of the versions carried, a label’s values, the rest and the nodes without it', () => {
    expect(tilesOf(summary, 'module')).toMatchObject([
      { id: 'module:web', count: 600, filter: { module: 'web' } },
    ]);
    expect(tilesOf(summary, 'label:role').map((t) => [t.title, t.count, t.filter?.on])).toEqual([
      ['role=web', 600, 'role=web'],
      ['2 more values', 100, undefined],
      ['without role', 300, '!role'],
    ]);
    expect(tilesOf(summary, 'agent')).toMatchObject([{ count: 990, filter: { on: 'agent=0.3.0' } }]);
    expect(tilesOf(summary, 'holds').map((t) => t.rollout ?? t.filter?.on)).toEqual(['r1', 'zone=a']);
  });

  it('filter the table on the server, a page at a time', () => {
    expect(tableRoute({ state: 'behind', on: 'role=web,zone!=a' }, 'abc')).toBe(
      '/nodes?limit=50&behind=true&on=role%3Dweb%2Czone%21%3Da&cursor=abc',
    );
  });
});

describe('the fleet view’s table', () => {
  it('sorts agent versions by their numbers, states most pressing first, ties by name', () => {
    const rows = [
      listed('c', { facts: { agent: '0.10.0' } as ListedNode['facts'] }),
      listed('a', { facts: { agent: '0.9.2' } as ListedNode['facts'] }),
      listed('b', { reportState: 'failed' }),
      listed('d', { behind: true }),
    ];
    expect(sortRows(rows, 'agent', 1).map((r) => r.node)).toEqual(['a', 'c', 'b', 'd']);
    expect(sortRows(rows, 'state', 1).map((r) => r.node)).toEqual(['b', 'd', 'a', 'c']);
    expect(sortRows(rows, 'name', -1).map((r) => r.node)).toEqual(['d', 'c', 'b', 'a']);
    expect(stateOf(listed('e', { enrolled: false, sentRevision: null, appliedRevision: null })).text).toBe(
      'never enrolled',
    );
  });
});

describe('a node’s neighbourhood', () => {
  const edge = (consumer: string, provider: string): MeshEdge => ({
    consumer: { node: consumer, module: 'app' },
    provider: { node: provider, module: 'db' },
    kind: 'pg',
    minted: true,
  });
  const details = (node: string, consumes: MeshEdge[], consumedBy: MeshEdge[]) =>
    ({ node, consumes, consumedBy }) as unknown as NodeDetails;

  it('puts consumers left, providers right, and at two hops theirs beyond and the other consumers beside it', () => {
    const center = details('app', [edge('app', 'db')], [edge('web', 'app')]);
    const around = new Map([
      ['db', details('db', [edge('db', 'disk')], [edge('app', 'db'), edge('cron', 'db')])],
      ['web', details('web', [edge('web', 'app')], [edge('lb', 'web')])],
    ]);
    expect(columnsOf(center, new Map()).columns).toEqual([[], ['web'], ['app'], ['db'], []]);
    expect(columnsOf(center, around).columns).toEqual([['lb'], ['web'], ['app', 'cron'], ['db'], ['disk']]);
  });
});
