import { instance } from '@viz-js/viz';
import { describe, expect, it } from 'vitest';
import { dotOf, mermaidOf } from '../../lib/clients/cli/graph-text.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import type { MeshGraph, MeshNode } from '../../lib/server/core/views/views.ts';

const node = (name: string, extra: Partial<MeshNode> = {}): MeshNode => ({
  ...({
    node: name,
    enrolled: true,
    enrolledAt: null,
    sentRevision: 2,
    sentAt: null,
    appliedRevision: 2,
    appliedAt: null,
    reportState: 'applied',
    behind: false,
    online: null,
    lastHeard: null,
  } satisfies NodeStatus),
  modules: [],
  presence: null,
  ...extra,
});

/** The beds' mesh (built-store-cross-node): an app consuming a broker on another node, one node behind. */
const graph: MeshGraph = {
  nodes: [
    node('app', {
      modules: [{ module: 'web', version: null, provides: null }],
      behind: true,
      appliedRevision: 1,
    }),
    node('broker', {
      modules: [{ module: 'store', version: '1.2.0', provides: 'amqp' }],
      presence: 'offline',
    }),
    node('spare', { sentRevision: null, appliedRevision: null }),
  ],
  edges: [
    {
      consumer: { node: 'app', module: 'web' },
      provider: { node: 'broker', module: 'store' },
      kind: 'amqp',
      minted: false,
    },
    // A provider the node list does not hold (removed a moment ago) is not drawn.
    {
      consumer: { node: 'app', module: 'web' },
      provider: { node: 'gone', module: 'db' },
      kind: 'postgres',
      minted: true,
    },
  ],
};

describe('mesh graph', () => {
  it('as Mermaid: a box per node with its modules and revisions, a labelled arrow per relation, marks as classes', () => {
    expect(mermaidOf(graph)).toBe(
      [
        'flowchart LR',
        '  n1["app<br/>web<br/>BEHIND · sent 2 · applied 1"]',
        '  n2["broker<br/>store (amqp)<br/>offline · sent 2 · applied 2"]',
        '  n3["spare<br/>(no modules)<br/>never sent"]',
        '  n1 -.->|"amqp: web → store"| n2',
        '  classDef behind fill:#fef3c7,stroke:#b45309,stroke-width:2px',
        '  classDef offline stroke-dasharray:5 3,color:#66788a',
        '  class n1 behind',
        '  class n2 offline',
        '',
      ].join('\n'),
    );
  });

  it('as DOT that Graphviz lays out: every node and the relation, labelled with its kind', async () => {
    const dot = dotOf(graph);
    const viz = await instance();
    const rendered = viz.render(dot, { format: 'json' });
    // Warnings are only about font metrics for · and →, which the WASM build has no fonts for.
    expect(rendered.errors.filter((error) => error.level === 'error')).toEqual([]);
    expect(rendered.status).toBe('success');
    const laidOut = JSON.parse(rendered.output ?? 'null') as {
      objects: Array<{ name: string; label: string }>;
      edges: Array<{ label: string; style?: string }>;
    };
    expect(laidOut.objects.map((object) => object.name)).toEqual(['app', 'broker', 'spare']);
    expect(laidOut.objects[0]?.label).toBe('app\\nweb\\nBEHIND · sent 2 · applied 1');
    expect(laidOut.edges).toEqual([expect.objectContaining({ label: 'amqp: web → store', style: 'dashed' })]);
  });

  it('escapes what DOT would read as its own syntax', () => {
    const odd = { nodes: [node('a"b\\c')], edges: [] } as MeshGraph;
    expect(dotOf(odd)).toContain('"a\\"b\\\\c" [label="a\\"b\\\\c\\n');
  });
});
