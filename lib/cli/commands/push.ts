import type { Command } from 'commander';
import * as z from 'zod';
import type { DeclarationChange } from '../../core/mesh/declaration-diff.ts';
import type { PlannedSend, PushPlan } from '../../core/mesh/plan.ts';
import { nodeName } from '../../core/names.ts';
import type { PushOutcome } from '../../core/ports.ts';
import { action, usage } from '../command-context.ts';
import { ExitCode } from '../exit-codes.ts';
import type { Output } from '../output.ts';

const maxRounds = z.coerce
  .number()
  .int()
  .min(1, 'max rounds is at least 1')
  .max(50, 'max rounds is at most 50');

type PushOptions = { behind: boolean; full: boolean; maxRounds: string; plan: boolean };

/** Registers `mesh push [NODE] [--behind] [--full] [--max-rounds N] [--plan]`. */
export function registerPushCommand(program: Command): void {
  program
    .command('push')
    .description(
      'send NODE, then flush every other node that is behind, in bounded rounds; or --behind without a node',
    )
    .argument('[node]', 'the node to compose and send')
    .option('--behind', 'push every node that is behind', false)
    .option('--full', 'with --behind: recompose every node (the audit), not only the marked ones', false)
    .option('--max-rounds <n>', 'the bound on flush rounds', '5')
    .option('--plan', 'say what the push would send and change, and write nothing', false)
    .action(
      action(async ({ api, output }, rawNode: string | undefined, options: PushOptions) => {
        const parsed = z
          .object({ node: nodeName.optional(), maxRounds })
          .refine((v) => v.node !== undefined || options.behind, 'name a node, or use --behind')
          .refine(() => !options.full || options.behind, '--full is an audit of --behind: use both')
          .safeParse({ node: rawNode, maxRounds: options.maxRounds });
        if (!parsed.success) return usage(output, parsed.error);
        const { node: n, maxRounds: rounds } = parsed.data;
        const request = {
          ...(n ? { node: n } : {}),
          ...(options.behind ? { behind: true } : {}),
          ...(options.full ? { full: true } : {}),
          maxRounds: rounds,
        };
        const what = n ? n : `every node that is behind${options.full ? ' (full audit)' : ''}`;
        if (options.plan) {
          output.progress(`planning a push of ${what}; nothing is written…`);
          const plan = await api.call<PushPlan>('POST', '/push/plan', request);
          output.result(plan);
          printPlan(output, plan);
          return plan.behind.length > 0 ? ExitCode.stillBehind : ExitCode.ok;
        }
        output.progress(`pushing ${what}…`);
        const outcome = await api.call<PushOutcome>('POST', '/push', request);
        output.result(outcome);
        printOutcome(output, outcome);
        return outcome.behind.length > 0 ? ExitCode.stillBehind : ExitCode.ok;
      }),
    );
}

function printOutcome(output: Output, outcome: PushOutcome) {
  if (outcome.pushed) output.line(`pushed ${outcome.pushed.node} at revision ${outcome.pushed.revision}`);
  for (const f of outcome.flushed)
    output.line(`flushed ${f.node} at revision ${f.revision} (round ${f.round})`);
  output.line(consistency(outcome, 'the mesh is'));
}

function printPlan(output: Output, plan: PushPlan) {
  const sends = [...(plan.pushed ? [plan.pushed] : []), ...plan.flushed];
  if (sends.length === 0) output.line('nothing is behind: nothing would be sent');
  for (const send of sends) {
    if (send.changes.length === 0) {
      output.line(`${send.node}: up to date at revision ${send.revision}; nothing to send`);
      continue;
    }
    output.line(`${send.node}: would be sent revision ${send.revision}${roundOf(send)}`);
    for (const change of send.changes) output.line(`  ${changeLine(change)}`);
  }
  output.line(consistency(plan, 'the push would leave the mesh'));
}

const roundOf = (send: PlannedSend) => (send.round === 0 ? ' (named)' : ` (flushed in round ${send.round})`);

const sign = { added: '+', removed: '-', changed: '~' } as const;
const changeLine = (change: DeclarationChange) =>
  `${sign[change.change]} ${change.section} ${change.item}${change.detail ? `: ${change.detail}` : ''}`;

/**
 * The closing lines: consistent, or which nodes are still behind and what to do; a node that
 * cannot be sent is named with its reason, since another push would not send it either.
 */
function consistency(
  outcome: Pick<PushOutcome, 'behind' | 'rounds' | 'unsendable'> & { flushed: readonly unknown[] },
  what: string,
) {
  const rounds = `${outcome.rounds} round${outcome.rounds === 1 ? '' : 's'}`;
  if (outcome.behind.length === 0)
    return `${what} consistent (${outcome.flushed.length} flushed in ${rounds})`;
  const unsendable = outcome.unsendable ?? [];
  const cannot = new Set(unsendable.map((entry) => entry.node));
  const waiting = outcome.behind.filter((node) => !cannot.has(node));
  return [
    ...unsendable.map((entry) => `${entry.node} NOT sent: ${entry.reason}`),
    waiting.length > 0
      ? `${what} NOT consistent: ${waiting.join(', ')} still behind after ${rounds}; run mesh push --behind again, or raise --max-rounds`
      : `${what} NOT consistent: ${[...cannot].join(', ')} cannot be sent until changed; every other node was sent`,
  ].join('\n');
}
