import type { Command } from 'commander';
import { parseSelector } from '../../server/core/mesh/labels.ts';
import type { MeshEdge } from '../../server/core/views/views.ts';
import { ExitCode } from '../common/exit-codes.ts';
import type { ApiClient } from '../http/api-client.ts';
import type { Output } from './output.ts';
import { cliLines } from './output-lines.ts';

/**
 * `mesh status` and `mesh node list` read their view a page at a time and print each page as it
 * comes (docs/http-api.md, "Pages and filters"), so a mesh of 50,000 nodes is never one answer.
 */
export type ViewOptions = {
  readonly behind?: boolean;
  readonly offline?: boolean;
  readonly failed?: boolean;
  readonly unhealthy?: boolean;
  readonly on?: string;
  readonly pageSize?: string;
};

/** Nodes a page asks for: a few pages for a mesh of hundreds, each answer a few hundred KiB at most. */
export const cliPageNodes = 250;

export function viewFilterOptions(command: Command): Command {
  return command
    .option('--behind', 'only the nodes marked behind')
    .option('--offline', "only the nodes whose host's broker connection is down")
    .option('--failed', 'only the nodes whose host last reported a failed apply')
    .option('--unhealthy', "only the nodes whose host's check last said unhealthy")
    .option(
      '--on <selector>',
      'only the nodes whose labels, or host facts agent, os and arch, match, e.g. role=web,arch=arm64 (docs/mesh-file.md)',
    )
    .option('--page-size <n>', 'nodes asked for a page at a time', String(cliPageNodes));
}

/** The query of the filters, or the problem with one of them (said as cli.usage by the caller). */
export function viewQueryOf(
  options: ViewOptions,
): { readonly query: URLSearchParams } | { readonly argument: string; readonly problem: string } {
  const query = new URLSearchParams();
  if (options.on !== undefined) {
    try {
      parseSelector(options.on);
    } catch (error) {
      return { argument: '--on', problem: (error as Error).message };
    }
    query.set('on', options.on);
  }
  const size = Number(options.pageSize ?? cliPageNodes);
  if (!Number.isInteger(size) || size < 1 || size > 1000)
    return { argument: '--page-size', problem: 'a page is 1 to 1000 nodes' };
  query.set('limit', String(size));
  for (const flag of ['behind', 'offline', 'failed', 'unhealthy'] as const)
    if (options[flag]) query.set(flag, 'true');
  return { query };
}

/** Whether any filter narrows the view (for the "nothing matches" line). */
export const filtered = (options: ViewOptions) =>
  Boolean(
    options.behind || options.offline || options.failed || options.unhealthy || options.on !== undefined,
  );

/**
 * Every page of `path`, each handed to `onPage` as it comes; says `view.page` between pages.
 * Returns every node, for `--json`'s one document.
 */
export async function readPages<Node>(
  api: ApiClient,
  output: Output,
  view: string,
  path: string,
  query: URLSearchParams,
  onPage: (nodes: readonly Node[], answer: { readonly edges?: MeshEdge[] }) => void,
): Promise<Node[]> {
  const all: Node[] = [];
  let cursor: string | undefined;
  for (let page = 1; ; page += 1) {
    const asked = new URLSearchParams(query);
    if (cursor) asked.set('cursor', cursor);
    const answer = await api.call<{ nodes: Node[]; edges?: MeshEdge[]; next?: string }>(
      'GET',
      `${path}?${asked}`,
    );
    all.push(...answer.nodes);
    onPage(answer.nodes, answer);
    if (!answer.next) return all;
    output.say(cliLines.viewPage, { view, page, nodes: all.length });
    cursor = answer.next;
  }
}

/** "3 behind: a, b, c", the names cut after 20 so a fleet's line stays a line. */
export function behindLine(behind: readonly string[]): string {
  const shown = behind.slice(0, 20).join(', ');
  const more = behind.length > 20 ? ` and ${(behind.length - 20).toLocaleString('en')} more` : '';
  return `${behind.length} behind: ${shown}${more}; mesh push --behind`;
}

/**
 * A node view read and printed whole: the filters checked, each page printed as it comes, then
 * `--json`'s one document, a line when nothing is listed, and the nodes still behind.
 */
export async function printNodeView<Node extends { readonly node: string; readonly behind: boolean }>(
  { api, output }: { readonly api: ApiClient; readonly output: Output },
  options: ViewOptions,
  view: { readonly name: string; readonly path: string; readonly printPage: (page: readonly Node[]) => void },
): Promise<ExitCode> {
  const asked = viewQueryOf(options);
  if ('problem' in asked) {
    output.say(cliLines.usage, { argument: asked.argument, problem: asked.problem });
    return ExitCode.usage;
  }
  const behind: string[] = [];
  const nodes = await readPages<Node>(api, output, view.name, view.path, asked.query, (page) => {
    view.printPage(page);
    behind.push(...page.filter((n) => n.behind).map((n) => n.node));
  });
  output.result({ nodes });
  if (nodes.length === 0)
    output.line(
      filtered(options) ? `no node matches ${filterWords(options)}` : 'no nodes yet: mesh node add NODE',
    );
  if (behind.length > 0) output.line(behindLine(behind));
  return ExitCode.ok;
}

const filterWords = (options: ViewOptions) =>
  [
    options.on,
    options.behind && '--behind',
    options.offline && '--offline',
    options.failed && '--failed',
    options.unhealthy && '--unhealthy',
  ]
    .filter(Boolean)
    .join(' ');
