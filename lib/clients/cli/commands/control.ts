import type { Command } from 'commander';
import type * as z from 'zod';
import type { Queued } from '../../../server/core/control/ports.ts';
import { buildId, moduleName, moduleVersion } from '../../../server/core/names.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { action, type CommandContext } from '../command-context.ts';
import { cliLines } from '../output-lines.ts';
import { followRollout, type WaveOptions, waveBody, withWaveOptions } from './rollout.ts';

type BuildAnswer = {
  queued: Queued;
  build: { id: string; module: string; version: string; result: string; finishedAt: string };
};
type UpgradeAnswer = { queued: Queued; upgrade: { module: string; version: string } };
type CatchUpAnswer = { queued: Queued };

type Check = { readonly what: string; readonly schema: z.ZodType; readonly value: unknown };

/**
 * Checks every command-line argument with the schema the API uses before anything is printed,
 * so two bad arguments make one usage error (one line each for people, one JSON document
 * under --json) naming both.
 */
export function checkArguments<Values extends Record<string, unknown>>(
  context: CommandContext,
  checks: { readonly [Key in keyof Values]: Check & { readonly schema: z.ZodType<Values[Key]> } },
): Values | undefined {
  const values: Record<string, unknown> = {};
  const problems: Array<{ argument: string; message: string }> = [];
  for (const [key, check] of Object.entries(checks) as Array<[string, Check]>) {
    const parsed = check.schema.safeParse(check.value);
    if (parsed.success) values[key] = parsed.data;
    else
      problems.push({
        argument: check.what,
        message: parsed.error.issues.map((issue) => issue.message).join('; '),
      });
  }
  if (problems.length === 0) return values as Values;
  for (const problem of problems)
    context.output.say(cliLines.usage, { argument: problem.argument, problem: problem.message });
  context.output.result({
    error: {
      code: 'usage',
      message: `invalid ${problems.map((problem) => problem.argument).join(', ')}`,
      problems,
    },
  });
  return undefined;
}

/** MODULE and VERSION on the command line, checked together. */
export const checkModuleVersion = (context: CommandContext, module: string, version: string) =>
  checkArguments(context, {
    module: { what: 'MODULE', schema: moduleName, value: module },
    version: { what: 'VERSION', schema: moduleVersion, value: version },
  });

const queuedLine = (queued: Queued) => `queued ${queued.subject} (message ${queued.messageId})`;

/**
 * Registers `mesh build`, `mesh upgrade` and `mesh catch-up`: each puts one message on the
 * control queue. Retracting a build and resetting a report (`mesh build retract`, `mesh report reset`) are in retract-and-reset.ts.
 */
export function registerControlCommands(program: Command): void {
  program
    .command('build')
    .description(
      'record a build result: queued under build:<id>; a repeat of a build id is ignored (`mesh build retract` takes one back)',
    )
    .argument('<module>', 'the module built')
    .argument('<version>', 'the version built')
    .option('--id <id>', 'the build id (default: <module>-<version>-<random>)')
    .option('--failed', 'the build failed (default: it succeeded)', false)
    .action(
      action(async (context, module: string, version: string, options: { id?: string; failed: boolean }) => {
        const checked = checkArguments(context, {
          module: { what: 'MODULE', schema: moduleName, value: module },
          version: { what: 'VERSION', schema: moduleVersion, value: version },
          id: { what: '--id', schema: buildId.optional(), value: options.id },
        });
        if (!checked) return ExitCode.usage;
        const body = {
          module: checked.module,
          version: checked.version,
          ...(checked.id !== undefined ? { id: checked.id } : {}),
          result: options.failed ? 'failed' : 'succeeded',
        };
        const answer = await context.api.call<BuildAnswer>('POST', '/builds', body);
        context.output.line(
          `build ${answer.build.id}: ${answer.build.module} ${answer.build.version} ${answer.build.result}, ${queuedLine(answer.queued)}`,
        );
        context.output.result(answer);
        return ExitCode.ok;
      }),
    );

  withWaveOptions(program.command('upgrade'))
    .description(
      "set a module's version and push every node that carries it (with --waves, in a rollout): queued under upgrade:<module>",
    )
    .argument('<module>', 'the module to upgrade')
    .argument('<version>', 'its new version')
    .option('--no-wait', 'with --waves: answer the rollout id at once')
    .action(
      action(async (context, module: string, version: string, options: WaveOptions) => {
        const body = checkModuleVersion(context, module, version);
        if (!body) return ExitCode.usage;
        if (options.waves !== undefined) {
          const answer = await context.api.call<UpgradeAnswer & { rollout: string }>('POST', '/upgrades', {
            ...body,
            ...waveBody(options),
          });
          context.output.line(
            `upgrade ${module} to ${version} in waves: rollout ${answer.rollout}, ${queuedLine(answer.queued)}`,
          );
          if (!options.wait) {
            context.output.result(answer);
            return ExitCode.ok;
          }
          return followRollout(context.api, context.output, answer.rollout);
        }
        const answer = await context.api.call<UpgradeAnswer>('POST', '/upgrades', body);
        context.output.line(
          `upgrade ${answer.upgrade.module} to ${answer.upgrade.version}: ${queuedLine(answer.queued)}; the nodes carrying it are pushed when it is taken`,
        );
        context.output.result(answer);
        return ExitCode.ok;
      }),
    );

  program
    .command('catch-up')
    .description("re-announce every module's latest successful build: queued under catch-up")
    .action(
      action(async (context) => {
        const answer = await context.api.call<CatchUpAnswer>('POST', '/catch-up', {});
        context.output.line(
          `catch-up: ${queuedLine(answer.queued)}; each module's latest successful build is re-announced as an upgrade`,
        );
        context.output.result(answer);
        return ExitCode.ok;
      }),
    );
}
