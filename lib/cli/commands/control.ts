import type { Command } from 'commander';
import type * as z from 'zod';
import type { Queued } from '../../core/control/ports.ts';
import { buildId, moduleName, moduleVersion } from '../../core/names.ts';
import { action, type CommandContext } from '../command-context.ts';
import { ExitCode } from '../exit-codes.ts';

type BuildAnswer = {
  queued: Queued;
  build: { id: string; module: string; version: string; result: string; finishedAt: string };
};
type UpgradeAnswer = { queued: Queued; upgrade: { module: string; version: string } };
type CatchUpAnswer = { queued: Queued };

/** Checks a command-line argument with the same schema the API uses; a usage error names it. */
function argument<T>(
  context: CommandContext,
  schema: z.ZodType<T>,
  value: unknown,
  what: string,
): T | undefined {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  context.output.error(`mesh: ${what}: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`);
  if (context.output.json) context.output.result({ error: { code: 'usage', message: `invalid ${what}` } });
  return undefined;
}

const queuedLine = (queued: Queued) => `queued ${queued.subject} (message ${queued.messageId})`;

/** Registers `mesh build`, `mesh upgrade` and `mesh catch-up`: each puts one message on the control queue. */
export function registerControlCommands(program: Command): void {
  program
    .command('build')
    .description('record a build result: queued under build:<id>; a repeat of a build id is ignored')
    .argument('<module>', 'the module built')
    .argument('<version>', 'the version built')
    .option('--id <id>', 'the build id (default: <module>-<version>-<random>)')
    .option('--failed', 'the build failed (default: it succeeded)', false)
    .action(
      action(async (context, module: string, version: string, options: { id?: string; failed: boolean }) => {
        const body = {
          module: argument(context, moduleName, module, 'MODULE'),
          version: argument(context, moduleVersion, version, 'VERSION'),
          ...(options.id !== undefined ? { id: argument(context, buildId, options.id, '--id') } : {}),
          result: options.failed ? 'failed' : 'succeeded',
        };
        if (!body.module || !body.version || ('id' in body && !body.id)) return ExitCode.usage;
        const answer = await context.api.call<BuildAnswer>('POST', '/builds', body);
        context.output.line(
          `build ${answer.build.id}: ${answer.build.module} ${answer.build.version} ${answer.build.result}, ${queuedLine(answer.queued)}`,
        );
        context.output.result(answer);
        return ExitCode.ok;
      }),
    );

  program
    .command('upgrade')
    .description("set a module's version and push every node that carries it: queued under upgrade:<module>")
    .argument('<module>', 'the module to upgrade')
    .argument('<version>', 'its new version')
    .action(
      action(async (context, module: string, version: string) => {
        const body = {
          module: argument(context, moduleName, module, 'MODULE'),
          version: argument(context, moduleVersion, version, 'VERSION'),
        };
        if (!body.module || !body.version) return ExitCode.usage;
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
