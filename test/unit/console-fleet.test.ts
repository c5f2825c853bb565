import { describe, expect, it } from 'vitest';
import type { MeshEdge, MeshGraph, MeshNode } from '../../lib/server/core/views/views.ts';

// The console's scripts are checked by their own tsconfig (lib/console/assets), not this one:
// they are loaded here by URL and given the types their JSDoc declares.
type Loaded = { next: string | null; add(page: MeshGraph): void; graph(): MeshGraph };
const { groupRoute, LoadedMesh, labelKeys, searchRoutes } = (await import(
  new URL('../../lib/clients/cli/console/assets/fleet.js', import.meta.url).href
)) as {
  groupRoute(member: MeshNode | undefined, group: string, groupBy: string | undefined): string | null;
  LoadedMesh: new (page: MeshGraph & { next?: string }) => Loaded;
  labelKeys(graph: MeshGraph): string[];
  searchRoutes(term: string): string[];
};
const { arrange } = (await import(
  new URL('../../lib/clients/cli/console/assets/layout.js', import.meta.url).href
)) as {
  arrange(
    graph: MeshGraph,
    view: { search: string; trouble: boolean; grouped: boolean; groupBy?: string },
  ): { boxes: Array<{ id: string }> };
};

const node = (name: string, module: string, labels?: Record<string, string>): MeshNode => ({
  node: name,
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
  ...(labels ? { labels } : {}),
  modules: [{ module, version: null, provides: null }],
  presence: null,
});
const edge = (consumer: string, provider: string): MeshEdge => ({
  consumer: { node: consumer, module: 'web' },
  provider: { node: provider, module: 'broker' },
  kind: 'amqp',
  minted: true,
});

describe('the console over a fleet', () => {
  it('keeps what it loaded, newer copies replacing older, and draws a relation once both ends are loaded', () => {
    const loaded = new LoadedMesh({
      nodes: [node('a', 'web')],
      edges: [edge('a', 'b')],
      next: 'cursor',
    } as never);
    const before = loaded.graph();
    loaded.add({ nodes: [node('b', 'broker'), { ...node('a', 'web'), behind: true }], edges: [] });

    expect(before.edges).toEqual([]);
    expect(loaded.next).toBe('cursor');
    expect(loaded.graph().nodes.map((n) => [n.node, n.behind])).toEqual([
      ['a', true],
      ['b', false],
    ]);
    expect(loaded.graph().edges).toEqual([edge('a', 'b')]);
  });

  it('loads a search by name and by module, and an opened group by its module or label', () => {
    const web = node('w1', 'web', { role: 'web' });

    expect(searchRoutes(' Web ')).toEqual(['/graph?prefix=web&limit=200', '/graph?module=web&limit=200']);
    expect(searchRoutes('a b')).toEqual([]);
    expect(groupRoute(web, 'web', '')).toBe('/graph?module=web&limit=200');
    expect(groupRoute(web, 'role=web', 'role')).toBe('/graph?on=role%3Dweb&limit=200');
  });

  it('groups by a label when asked, the nodes without it apart', () => {
    const graph = {
      nodes: [
        node('a', 'web', { role: 'web' }),
        node('b', 'db', { role: 'web' }),
        node('c', 'db'),
        node('d', 'db'),
      ],
      edges: [],
    };
    const ids = (groupBy: string) =>
      arrange(graph, { search: '', trouble: false, grouped: true, groupBy })
        .boxes.map((b) => b.id)
        .sort();

    expect(labelKeys(graph)).toEqual(['role']);
    expect(ids('role')).toEqual(['group:!role', 'group:role=web']);
    expect(ids('')).toEqual(['group:db', 'node:a']);
  });
});
