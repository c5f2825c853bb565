import type { Command } from 'commander';
import * as z from 'zod';
import type { HostFacts } from '../../../server/core/mesh/host-facts.ts';
import { nodeName } from '../../../server/core/names.ts';
import type { PushRecordView } from '../../../server/core/push/records.ts';
import type { NodeRevert } from '../../../server/core/views/ports.ts';
import type { ListedNode, MeshEdge, MeshGraph, NodeDetails } from '../../../server/core/views/views.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { action, usage } from '../command-context.ts';
import { type GraphFormat, graphText } from '../graph-text.ts';
import { healthText } from '../health-text.ts';
import { releaseOf } from '../held-back.ts';
import { stateOf } from '../node-state.ts';
import type { Output } from '../output.ts';
import { cliLines, holderText } from '../output-lines.ts';
import {
  cliPageNodes,
  printNodeView,
  readPages,
  type ViewOptions,
  viewFilterOptions,
} from '../view-pages.ts';
import { waitingText } from './mesh.ts';

/** Registers what operators look at: `mesh node list|show`, `mesh pushes`, `mesh graph`. */
export function registerViewCommands(program: Command): void {
  const node = program.commands.find((command) => command.name() === 'node') ?? program.command('node');
  viewFilterOptions(
    node
      .command('list')
      .description('every node: modules, relations each way, sent and applied revisions, behind, last heard'),
  ).action(
    action(async (context, options: ViewOptions) =>
      printNodeView<ListedNode>(context, options, {
        name: 'node list',
        path: '/nodes',
        // Columns are padded within a page: a page is printed before the next is read.
        printPage: (page) => printTable(context.output, page.map(listRow)),
      }),
    ),
  );
  node
    .command('show')
    .description('one node: modules, relations both ways, token, enrolment and key, sent and applied, behind')
    .argument('<node>', 'the node')
    .action(
      action(async ({ api, output }, raw: string) => {
        const parsed = nodeName.safeParse(raw);
        if (!parsed.success) return usage(output, parsed.error);
        const details = await api.call<NodeDetails>('GET', `/nodes/${parsed.data}`);
        output.result(details);
        for (const line of detailLines(details)) output.line(line);
        return ExitCode.ok;
      }),
    );

  program
    .command('pushes')
    .description('the latest pushes, newest first: who asked, what was sent, what was still behind')
    .option('--limit <n>', 'how many', '20')
    .action(
      action(async ({ api, output }, options: { limit: string }) => {
        const limit = z.coerce.number().int().min(1, 'limit is at least 1').max(100, 'limit is at most 100');
        const parsed = limit.safeParse(options.limit);
        if (!parsed.success) return usage(output, parsed.error);
        const { pushes } = await api.call<{ pushes: PushRecordView[] }>(
          'GET',
          `/pushes?limit=${parsed.data}`,
        );
        output.result({ pushes });
        if (pushes.length === 0) output.line('no push kept yet: records are kept for 90 days');
        for (const push of pushes) for (const line of pushLines(push)) output.line(line);
        return ExitCode.ok;
      }),
    );

  program
    .command('graph')
    .description('the mesh as a graph: Mermaid (default, pastes into GitHub/GitLab markdown) or DOT')
    .option('--format <format>', 'mermaid or dot', 'mermaid')
    .action(
      action(async ({ api, output }, options: { format: string }) => {
        const parsed = z
          .enum(['mermaid', 'dot'], { message: 'the format is mermaid or dot' })
          .safeParse(options.format);
        if (!parsed.success) return usage(output, parsed.error);
        // Every page, so a mesh past one page is drawn whole; the text is printed once at the end.
        const graph: { nodes: MeshGraph['nodes'][number][]; edges: MeshEdge[] } = { nodes: [], edges: [] };
        const query = new URLSearchParams({ limit: String(cliPageNodes) });
        await readPages<MeshGraph['nodes'][number]>(api, output, 'graph', '/graph', query, (nodes, page) => {
          graph.nodes.push(...nodes);
          graph.edges.push(...(page.edges ?? []));
        });
        output.result(graph);
        output.line(graphText(graph, parsed.data as GraphFormat).trimEnd());
        output.say(cliLines.graphCounted, { nodes: graph.nodes.length, relations: graph.edges.length });
        return ExitCode.ok;
      }),
    );
}

const modulesOf = (node: Pick<ListedNode, 'modules'>) =>
  node.modules.map((m) => (m.provides ? `${m.module} (${m.provides})` : m.module)).join(', ') || '-';

function listRow(n: ListedNode): string[] {
  return [
    n.node,
    modulesOf(n),
    `consumes ${n.relations.consumes}`,
    `consumed by ${n.relations.consumedBy}`,
    `sent ${n.sentRevision ?? '-'}`,
    `applied ${n.appliedRevision ?? '-'}`,
    // A column of its own in the padded table: `-` for a host that reported no health.
    healthText(n.health, false) ?? 'health -',
    ...stateOf(n),
    ...(n.presence ? [n.presence] : []),
    `last heard ${n.lastHeard ?? 'never'}`,
  ];
}

/** Columns padded to their widest cell, so a long list reads down. */
function printTable(output: Output, rows: string[][]) {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  for (const row of rows)
    output.line(
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    );
}

const relationLine = (edge: MeshEdge, far: 'provider' | 'consumer') => {
  const near = far === 'provider' ? edge.consumer : edge.provider;
  const other = edge[far];
  const arrow = far === 'provider' ? '→' : '←';
  return `${near.module} ${arrow} ${other.node}/${other.module} (${edge.kind})${edge.minted ? '' : ', not pushed yet'}`;
};

function detailLines(d: NodeDetails): string[] {
  const field = (name: string, values: readonly string[]) =>
    (values.length > 0 ? values : ['-']).map((value, i) => `  ${(i === 0 ? name : '').padEnd(12)}${value}`);
  const report = d.report
    ? [
        `last report ${d.report.state ?? '-'} revision ${d.report.revision ?? '-'}${d.report.step ? ` (${d.report.step})` : ''}, heard ${d.report.heardAt ?? '-'}`,
      ]
    : [];
  const token = d.token
    ? [`${d.token.state} (${d.token.tokenId}), issued ${d.token.issuedAt}, valid until ${d.token.validUntil}`]
    : ['none issued'];
  return [
    `${d.node}  ${d.behind ? `BEHIND since ${d.markedAt ?? '?'}: mesh push ${d.node}` : 'up to date'}${d.presence ? `  ${d.presence}` : ''}`,
    ...field(
      'labels',
      Object.entries(d.labels ?? {}).map(([key, value]) => `${key}=${value}`),
    ),
    ...field(
      'modules',
      d.modules.map(
        (m) =>
          `${m.module}${m.version ? ` ${m.version}` : ''}${m.provides ? ` (provides ${m.provides})` : ''}`,
      ),
    ),
    ...field(
      'consumes',
      d.consumes.map((e) => relationLine(e, 'provider')),
    ),
    ...(d.waiting ? field('waiting', [waitingText(d.waiting)]) : []),
    ...(d.heldBack ? field('held back', [`by ${holderText(d.heldBack)}: ${releaseOf(d.heldBack)}`]) : []),
    ...field(
      'consumed by',
      d.consumedBy.map((e) => relationLine(e, 'consumer')),
    ),
    ...field(
      'sent',
      d.sentRevision === null
        ? ['never']
        : [
            `revision ${d.sentRevision} at ${d.sentAt}, digest ${d.sentDigest}${d.declarationParts === null ? '' : `, kept in ${d.declarationParts} parts (mesh declaration ${d.node})`}`,
          ],
    ),
    ...field('applied', [
      d.appliedRevision === null ? 'never' : `revision ${d.appliedRevision} at ${d.appliedAt}`,
      ...report,
    ]),
    ...(d.revert ? field('reverted', [revertLine(d.revert)]) : []),
    ...field('health', healthLines(d)),
    ...field('machine', factLines(d.facts)),
    ...field('enrolled', d.enrolled ? [`${d.enrolledAt}, key ${d.thumbprint}`] : ['no']),
    ...field('token', token),
    ...field('last heard', [d.lastHeard ?? 'never']),
  ];
}

/** What its host last said of its machine; `-` before it said anything. */
function factLines(facts: HostFacts | undefined): string[] {
  if (!facts) return [];
  const gib = (facts.memoryBytes / 1024 ** 3).toFixed(1);
  return [
    `${facts.os}${facts.osVersion ? ` (${facts.osVersion})` : ''}, kernel ${facts.kernel}, ${facts.arch}`,
    `${facts.cpus} ${facts.cpus === 1 ? 'CPU' : 'CPUs'}, ${gib} GiB memory, booted ${facts.bootedAt}`,
    `mesh-host ${facts.agent}${facts.build ? ` (build ${facts.build})` : ''}`,
    ...(facts.upgrade
      ? [
          `release ${facts.upgrade.version} ${facts.upgrade.outcome}${facts.upgrade.reason ? `: ${facts.upgrade.reason}` : ''} (at ${facts.upgrade.at})`,
        ]
      : []),
  ];
}

/** `revision 5 given up for 4 (unhealthy) at …`: what the host went back to, and why. */
function revertLine(revert: NodeRevert): string {
  const why = {
    failed: 'its apply command failed',
    unhealthy: 'its check did not pass',
    'cut-off': 'it could not reach the control plane after applying it',
  }[revert.cause];
  return revert.ok
    ? `revision ${revert.from} given up for ${revert.to}, the last applied and healthy: ${why} (at ${revert.at ?? '-'})`
    : `revision ${revert.from} given up, but applying ${revert.to} again FAILED: ${why} (at ${revert.at ?? '-'})`;
}

/** The health, since when and of which revision, then the outputs' ends, indented as they came. */
function healthLines(d: NodeDetails): string[] {
  const health = d.health;
  const state = health
    ? `${healthText(health) ?? health.state} (revision ${health.revision}${health.since ? `, since ${health.since}` : ''}${health.checkedAt ? `, checked ${health.checkedAt}` : ''})`
    : 'unknown: its host reported none (mesh-host run --check CMD)';
  const output = (name: string, text: string | null | undefined) =>
    text
      ? [
          `${name}:`,
          ...text
            .replace(/\n+$/, '')
            .split('\n')
            .map((line) => `  ${line}`),
        ]
      : [];
  return [
    state,
    ...output('apply output (stderr, its end)', d.output?.apply),
    ...output('check output (its end)', d.output?.check),
  ];
}

function pushLines(push: PushRecordView): string[] {
  const what = push.request.node
    ? `push ${push.request.node}`
    : `push --behind${push.request.full ? ' --full' : ''}`;
  const outcome =
    push.state === 'running'
      ? 'running'
      : push.state === 'unfinished'
        ? 'no answer recorded (the request ended before the flow did)'
        : push.outcome === 'failed'
          ? `failed: ${push.error}`
          : push.outcome === 'still-behind'
            ? `still behind: ${push.behind.join(', ')}${push.behindCount > push.behind.length ? ` and ${push.behindCount - push.behind.length} more` : ''}`
            : 'consistent';
  const sent = [
    push.pushed ? `pushed ${push.pushed.node} at revision ${push.pushed.revision}` : '',
    push.state === 'done' && push.outcome !== 'failed'
      ? `flushed ${push.flushedCount} in ${push.rounds} round${push.rounds === 1 ? '' : 's'}`
      : '',
  ].filter(Boolean);
  return [
    `${push.id}  ${push.startedAt}  ${push.requestedBy}  ${what}  ${outcome}${sent.length ? `; ${sent.join(', ')}` : ''}`,
  ];
}
