import type { MeshEdge, MeshGraph, MeshNode } from '../../server/core/views/views.ts';

/**
 * `mesh graph` as text: Mermaid (pastes into GitHub and GitLab markdown) or Graphviz DOT. One
 * box per node with its modules and revisions; one arrow per relation, consumer → provider,
 * labelled with the provider's kind and the two modules; dashed while the relation has not been
 * pushed yet. Behind nodes are filled amber, offline ones dashed.
 */
export type GraphFormat = 'mermaid' | 'dot';

const modulesOf = (node: MeshNode) =>
  node.modules.map((m) => (m.provides ? `${m.module} (${m.provides})` : m.module)).join(', ') ||
  '(no modules)';

function revisionsOf(node: MeshNode): string {
  const marks = [node.behind ? 'BEHIND' : '', node.presence === 'offline' ? 'offline' : ''].filter(Boolean);
  const sent =
    node.sentRevision === null
      ? 'never sent'
      : `sent ${node.sentRevision} · applied ${node.appliedRevision ?? '–'}`;
  return [...marks, sent].join(' · ');
}

const edgeLabel = (edge: MeshEdge) => `${edge.kind}: ${edge.consumer.module} → ${edge.provider.module}`;

/** Edges whose two ends are both in the graph: a provider just removed is not drawn as a stray box. */
const drawnEdges = (graph: MeshGraph, known: ReadonlyMap<string, string>) =>
  graph.edges.filter((edge) => known.has(edge.consumer.node) && known.has(edge.provider.node));

export function mermaidOf(graph: MeshGraph): string {
  const ids = new Map(graph.nodes.map((node, index) => [node.node, `n${index + 1}`]));
  const label = (text: string) => text.replaceAll('"', '#quot;');
  const lines = ['flowchart LR'];
  for (const node of graph.nodes) {
    lines.push(
      `  ${ids.get(node.node)}["${label(`${node.node}<br/>${modulesOf(node)}<br/>${revisionsOf(node)}`)}"]`,
    );
  }
  for (const edge of drawnEdges(graph, ids)) {
    const arrow = edge.minted ? '-->' : '-.->';
    lines.push(
      `  ${ids.get(edge.consumer.node)} ${arrow}|"${label(edgeLabel(edge))}"| ${ids.get(edge.provider.node)}`,
    );
  }
  lines.push(
    '  classDef behind fill:#fef3c7,stroke:#b45309,stroke-width:2px',
    '  classDef offline stroke-dasharray:5 3,color:#66788a',
  );
  const marked = (test: (node: MeshNode) => boolean) =>
    graph.nodes.filter(test).map((node) => ids.get(node.node));
  const behind = marked((node) => node.behind);
  const offline = marked((node) => node.presence === 'offline');
  if (behind.length > 0) lines.push(`  class ${behind.join(',')} behind`);
  if (offline.length > 0) lines.push(`  class ${offline.join(',')} offline`);
  return `${lines.join('\n')}\n`;
}

/** A DOT string: quotes and backslashes escaped, a line break as DOT's own `\n`. */
const quoted = (text: string) =>
  `"${text.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`;

export function dotOf(graph: MeshGraph): string {
  const known = new Map(graph.nodes.map((node) => [node.node, node.node]));
  const lines = [
    'digraph mesh {',
    '  rankdir=LR;',
    '  node [shape=box, style="rounded", fontname="Helvetica", fontsize=11];',
    '  edge [fontname="Helvetica", fontsize=9, color="#52606d"];',
  ];
  for (const node of graph.nodes) {
    const attributes = [`label=${quoted(`${node.node}\n${modulesOf(node)}\n${revisionsOf(node)}`)}`];
    const styles = ['rounded'];
    if (node.behind) {
      styles.push('filled');
      attributes.push('fillcolor="#fef3c7"', 'color="#b45309"', 'penwidth=2');
    }
    if (node.presence === 'offline') styles.push('dashed');
    attributes.push(`style=${quoted(styles.join(','))}`);
    lines.push(`  ${quoted(node.node)} [${attributes.join(', ')}];`);
  }
  for (const edge of drawnEdges(graph, known)) {
    const style = edge.minted ? '' : ', style=dashed';
    lines.push(
      `  ${quoted(edge.consumer.node)} -> ${quoted(edge.provider.node)} [label=${quoted(edgeLabel(edge))}${style}];`,
    );
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

export const graphText = (graph: MeshGraph, format: GraphFormat) =>
  format === 'dot' ? dotOf(graph) : mermaidOf(graph);
