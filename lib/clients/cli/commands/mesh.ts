import type { Command } from 'commander';
import * as z from 'zod';
import type { HostFacts } from '../../../server/core/mesh/host-facts.ts';
import type { WaitingRelations } from '../../../server/core/mesh/waiting.ts';
import { labels as labelsSchema } from '../../../server/core/mesh-file/schema.ts';
import { moduleName, nodeName } from '../../../server/core/names.ts';
import type { Delivery } from '../../../server/core/push/ports.ts';
import type { NodeStatus } from '../../../server/core/views/ports.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { action, nodeModuleArgument, usage } from '../command-context.ts';
import { healthText, revertText } from '../health-text.ts';
import { stateOf } from '../node-state.ts';
import { cliLines } from '../output-lines.ts';
import { filtered, printNodeView, type ViewOptions, viewFilterOptions } from '../view-pages.ts';
import { checkedInterval, watching } from '../watch.ts';
import { printSummary } from './summary.ts';

/** Registers the mesh area's `mesh` commands. */
export function registerMeshCommands(program: Command): void {
  const node = program.command('node').description('the nodes of the mesh');
  node
    .command('add')
    .description('add NODE to the mesh')
    .argument('<node>', 'the node, a DNS label')
    .option('--label <key=value>', 'a label (repeatable), as in the mesh file', collect, [])
    .action(
      action(async ({ api, output }, raw: string, options: { label: string[] }) => {
        const parsed = z
          .object({ node: nodeName, labels: labelsSchema })
          .safeParse({ node: raw, labels: labelsOf(options.label) });
        if (!parsed.success) return usage(output, parsed.error);
        const added = await api.call<{ node: string }>('POST', '/nodes', {
          node: parsed.data.node,
          ...(Object.keys(parsed.data.labels).length > 0 ? { labels: parsed.data.labels } : {}),
        });
        output.result(added);
        output.line(`added node ${added.node}; assign modules to it, then push it`);
        return ExitCode.ok;
      }),
    );

  program
    .command('assign')
    .description(
      'assign MODULE to NODE; --provides KIND declares the module a provider (fixed by its first assignment)',
    )
    .argument('<node>', 'the node')
    .argument('<module>', 'the module')
    .option('--provides <kind>', 'the kind of resource the module provides to consumers, e.g. amqp')
    .action(
      action(async ({ api, output }, rawNode: string, rawModule: string, options: { provides?: string }) => {
        const parsed = z
          .object({ node: nodeName, module: moduleName })
          .safeParse({ node: rawNode, module: rawModule });
        if (!parsed.success) return usage(output, parsed.error);
        const { node: n, module: m } = parsed.data;
        const body = options.provides ? { provides: options.provides } : {};
        const assigned = await api.call<{ provides: string | null }>('PUT', `/nodes/${n}/modules/${m}`, body);
        output.result(assigned);
        output.line(
          `assigned ${m}${assigned.provides ? ` (provides ${assigned.provides})` : ''} to ${n}; ${n} is now behind: mesh push ${n}`,
        );
        return ExitCode.ok;
      }),
    );

  program
    .command('consume')
    .description('make NODE/MODULE a consumer of the provider PROVIDER-NODE/MODULE (same or another node)')
    .argument('<consumer>', 'NODE/MODULE')
    .argument('<provider>', 'PROVIDER-NODE/MODULE')
    .action(
      action(async ({ api, output }, rawConsumer: string, rawProvider: string) => {
        const parsed = z.object({ consumer: nodeModuleArgument, provider: nodeModuleArgument }).safeParse({
          consumer: rawConsumer,
          provider: rawProvider,
        });
        if (!parsed.success) return usage(output, parsed.error);
        const { consumer, provider } = parsed.data;
        const related = await api.call(
          'POST',
          `/nodes/${consumer.node}/modules/${consumer.module}/consumes`,
          {
            provider,
          },
        );
        output.result(related);
        output.line(
          `${consumer.node}/${consumer.module} consumes ${provider.node}/${provider.module}; ` +
            // sealed to both hosts' keys, a provision waits for both enrolments (a waiting relation)
            `its provision is minted once ${consumer.node} and ${provider.node} are both enrolled, and sent with the grant to ${provider.node} by mesh push ${consumer.node} or by the enrolment that completes the pair`,
        );
        return ExitCode.ok;
      }),
    );

  viewFilterOptions(
    program
      .command('status')
      .description(
        'every node: enrolled, sent revision, applied revision, behind, online, agent, OS, architecture, last heard',
      )
      .option('--summary', 'only the counts of the mesh, read without reading any node')
      .option('--rebuild', 'with --summary: count the summary again from every node first (a full read)')
      .option('--watch', 'print it again every --interval until Ctrl-C, as watch does')
      .option('--interval <duration>', 'with --watch: how often, 1s to 60m', '2s'),
  ).action(
    action(async (context, options: StatusOptions & { watch?: boolean; interval: string }) => {
      const { api, output } = context;
      const summaryProblem = summaryOptionsProblem(options);
      if (summaryProblem) {
        output.say(cliLines.usage, summaryProblem);
        return ExitCode.usage;
      }
      const once = () =>
        options.summary
          ? printSummary(api, output, options.rebuild === true)
          : printNodeView<NodeStatus>(context, options, {
              name: 'status',
              path: '/status',
              printPage: (page) => {
                for (const s of page) output.line(statusLine(s));
              },
            });
      if (!options.watch) return once();
      const every = checkedInterval(options.interval);
      if (typeof every !== 'number') {
        output.say(cliLines.usage, every);
        return ExitCode.usage;
      }
      return watching(output, `mesh status${options.summary ? ' --summary' : ''}`, every, async () => {
        const exit = await once();
        // a refused filter is refused every time: said once, not every interval
        return { done: exit === ExitCode.usage, exit };
      });
    }),
  );

  program
    .command('declaration')
    .description('print what NODE was last sent')
    .argument('<node>', 'the node')
    .action(
      action(async ({ api, output }, raw: string) => {
        const parsed = nodeName.safeParse(raw);
        if (!parsed.success) return usage(output, parsed.error);
        const delivery = await api.call<Delivery>('GET', `/nodes/${parsed.data}/declaration`);
        output.result(delivery);
        output.say(cliLines.declarationSent, {
          node: delivery.node,
          revision: delivery.revision,
          sentAt: delivery.sentAt,
          digest: delivery.digest,
        });
        output.line(JSON.stringify(delivery.declaration, null, 2));
        return ExitCode.ok;
      }),
    );
}

type StatusOptions = ViewOptions & { readonly summary?: boolean; readonly rebuild?: boolean };

/** --summary counts the whole mesh, so it takes no filter, and --rebuild goes only with it. */
function summaryOptionsProblem(options: StatusOptions) {
  if (options.rebuild && !options.summary) return { argument: '--rebuild', problem: 'goes with --summary' };
  if (options.summary && options.on !== undefined)
    return { argument: '--on', problem: 'the summary counts the whole mesh; drop --on or --summary' };
  if (options.summary && filtered(options))
    return {
      argument: '--summary',
      problem: 'the summary counts the whole mesh; drop the filters or --summary',
    };
  return undefined;
}

function statusLine(s: NodeStatus): string {
  return [
    s.node,
    s.enrolled ? 'enrolled' : 'not enrolled',
    `sent ${s.sentRevision ?? '-'}`,
    `applied ${s.appliedRevision ?? '-'}${s.reportState && s.reportState !== 'applied' ? ` (${s.reportState})` : ''}`,
    ...optional(revertText(s.revert), healthText(s.health)),
    ...stateOf(s),
    ...(s.online === null ? [] : [s.online ? 'online' : 'offline']),
    ...factColumns(s.facts),
    `last heard ${s.lastHeard ?? 'never'}`,
    ...(s.waiting ? [waitingText(s.waiting)] : []),
  ].join('  ');
}

/** `agent 0.1.0  debian-12  x64`: what a selector matches of the host's facts (`--on agent=…,os=…,arch=…`). */
export function factColumns(facts: HostFacts | undefined): string[] {
  return facts ? [`agent ${facts.agent}`, facts.os, facts.arch] : [];
}

const optional = (...texts: Array<string | undefined>) => texts.filter((text) => text !== undefined);

/** `2 relations waiting for db1, db2 to enrol`, naming at most the nodes the row carries. */
export function waitingText(waiting: WaitingRelations): string {
  const more = waiting.nodes - waiting.for.length;
  const names = `${waiting.for.join(', ')}${more > 0 ? ` and ${more} more` : ''}`;
  return `${waiting.relations} ${waiting.relations === 1 ? 'relation' : 'relations'} waiting for ${names} to enrol`;
}

/** Commander's way to take a repeated option as a list. */
export const collect = (value: string, previous: readonly string[]) => [...previous, value];

/** `k=v` options as labels; a malformed one keeps its text as the key, for the schema to refuse. */
export const labelsOf = (options: readonly string[]): Record<string, string> =>
  Object.fromEntries(
    options.map((option) => {
      const at = option.indexOf('=');
      return at < 0 ? [option, ''] : [option.slice(0, at), option.slice(at + 1)];
    }),
  );
