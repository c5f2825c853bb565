import type { Command } from 'commander';
import type { RecordedReport, Retraction } from '../../../server/core/control/ports.ts';
import { nodeName } from '../../../server/core/names.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { action } from '../command-context.ts';
import { checkArguments, checkModuleVersion } from './control.ts';

/** What the control plane answers (lib/server/api/handlers/control.ts). */
type RetractAnswer = { retracted: Omit<Retraction, 'latest'>; latest: Retraction['latest'] };
type ResetAnswer = { node: string; reset: RecordedReport | null };

/**
 * Registers what an operator undoes of what senders said to the control plane, after
 * registerControlCommands: `mesh build retract MODULE VERSION` (under `mesh build`, so a module
 * named `retract` is recorded with POST /builds, not `mesh build`) and `mesh report reset NODE`.
 */
export function registerRetractAndReset(program: Command): void {
  const build = program.commands.find((command) => command.name() === 'build') ?? program.command('build');
  build
    .command('retract')
    .description(
      'retract MODULE VERSION for good: no build of it is the latest again, and catch-up announces the build before it',
    )
    .argument('<module>', 'the module')
    .argument('<version>', 'the version to retract')
    .action(
      action(async (context, module: string, version: string) => {
        const body = checkModuleVersion(context, module, version);
        if (!body) return ExitCode.usage;
        const answer = await context.api.call<RetractAnswer>('POST', '/builds/retractions', body);
        const { retracted, latest } = answer;
        const what = `${retracted.module} ${retracted.version}`;
        context.output.line(
          retracted.already
            ? `${what} was already retracted at ${retracted.retractedAt}`
            : `retracted ${what} (${plural(retracted.builds.length, 'build')}${retracted.builds.length > 0 ? `: ${retracted.builds.join(', ')}` : ''})`,
        );
        context.output.line(
          latest
            ? `${retracted.module}'s latest build is ${latest.version} (${latest.id}): mesh catch-up announces it to the nodes that carry ${retracted.module}`
            : `${retracted.module} has no other build: catch-up announces nothing for it; mesh upgrade ${retracted.module} VERSION sets the version its nodes are sent`,
        );
        context.output.result(answer);
        return ExitCode.ok;
      }),
    );

  const report =
    program.commands.find((command) => command.name() === 'report') ??
    program.command('report').description("a node's kept report");
  report
    .command('reset')
    .description("forget NODE's kept report, so its host's next report is recorded whatever its sequence")
    .argument('<node>', 'the node')
    .action(
      action(async (context, node: string) => {
        const checked = checkArguments(context, { node: { what: 'NODE', schema: nodeName, value: node } });
        if (!checked) return ExitCode.usage;
        const answer = await context.api.call<ResetAnswer>('DELETE', `/nodes/${checked.node}/report`);
        const { reset } = answer;
        context.output.line(
          reset
            ? `reset ${answer.node}'s report (sequence ${reset.sequence}, ${reset.state} of revision ${reset.revision}, heard ${reset.heardAt}); its host's next report is recorded whatever its sequence`
            : `${answer.node} has no report to reset; its host's next report is recorded`,
        );
        context.output.result(answer);
        return ExitCode.ok;
      }),
    );
}

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;
