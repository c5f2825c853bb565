import type { Command } from 'commander';
import type { Freeze } from '../../../server/core/hold/freeze.ts';
import { unfreezeCommand } from '../../../server/core/hold/freeze.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { action, type CommandContext } from '../command-context.ts';
import { cliLines } from '../output-lines.ts';

type Target = { on?: string; all: boolean };

/** `--on SELECTOR` or `--all`, exactly one; a usage error (exit 2) otherwise. */
function targetOf(context: CommandContext, options: Target): { on: string } | { all: true } | undefined {
  if ((options.on === undefined) === !options.all) {
    context.output.say(cliLines.usage, {
      argument: '--on/--all',
      problem: 'name the nodes: --on SELECTOR (role=db), or --all',
    });
    context.output.result({ error: { code: 'usage', message: 'name the nodes: --on SELECTOR, or --all' } });
    return undefined;
  }
  return options.on !== undefined ? { on: options.on } : { all: true };
}

const onText = (on: string) => (on === 'all' ? 'every node (--all)' : `the nodes matching ${on}`);
const untilText = (freeze: Freeze) => (freeze.until ? `until ${freeze.until}` : 'until lifted');

/**
 * `mesh freeze --on SELECTOR|--all [--until TIME] --reason TEXT`, `mesh unfreeze --on
 * SELECTOR|--all`, `mesh freezes` (docs/decisions/held-back.md): a freeze holds its nodes back
 * as a halted rollout does; every push names them.
 */
export function registerFreezeCommands(program: Command): void {
  program
    .command('freeze')
    .description('hold back every node a selector matches (or all): nothing is sent them until unfrozen')
    .option('--on <selector>', 'the nodes whose labels match, e.g. role=db (docs/mesh-file.md)')
    .option('--all', 'every node', false)
    .option(
      '--until <time>',
      'lift it by itself at a time (2026-12-24T18:00:00Z) or after a while (90m, 12h, 3d)',
    )
    .requiredOption('--reason <text>', 'why: every push that leaves a node alone says it')
    .action(
      action(async (context, options: Target & { until?: string; reason: string }) => {
        const target = targetOf(context, options);
        if (!target) return ExitCode.usage;
        const { freeze } = await context.api.call<{ freeze: Freeze }>('POST', '/freezes', {
          ...target,
          reason: options.reason,
          ...(options.until !== undefined ? { until: options.until } : {}),
        });
        context.output.result({ freeze });
        context.output.line(
          `froze ${onText(freeze.on)} ${untilText(freeze)}: ${freeze.reason}; ${unfreezeCommand(freeze.on)} lifts it`,
        );
        return ExitCode.ok;
      }),
    );
  program
    .command('unfreeze')
    .description('lift the freeze made on the same selector (or on --all): the next push sends its nodes')
    .option('--on <selector>', 'the selector the freeze was made on')
    .option('--all', 'the freeze made with --all', false)
    .action(
      action(async (context, options: Target) => {
        const target = targetOf(context, options);
        if (!target) return ExitCode.usage;
        const query = 'on' in target ? `on=${encodeURIComponent(target.on)}` : 'all=true';
        const answer = await context.api.call<{ lifted: Freeze; freezes: Freeze[] }>(
          'DELETE',
          `/freezes?${query}`,
        );
        context.output.result(answer);
        const rest = answer.freezes.length;
        context.output.line(
          `lifted the freeze on ${onText(answer.lifted.on)}; ${rest === 0 ? 'no freeze is in force' : `${rest} still in force (mesh freezes)`}; mesh push --behind sends what it held back`,
        );
        return ExitCode.ok;
      }),
    );
  program
    .command('freezes')
    .description('the freezes in force: what each holds, why, by whom and until when')
    .action(
      action(async (context) => {
        const { freezes } = await context.api.call<{ freezes: Freeze[] }>('GET', '/freezes');
        context.output.result({ freezes });
        if (freezes.length === 0) context.output.line('no freeze is in force');
        for (const f of freezes)
          context.output.line(
            `${f.on === 'all' ? '--all' : f.on}  ${untilText(f)}  by ${f.by} at ${f.at}: ${f.reason}`,
          );
        return ExitCode.ok;
      }),
    );
}
