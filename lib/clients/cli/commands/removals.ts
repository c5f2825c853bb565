import type { Command } from 'commander';
import * as z from 'zod';
import type { Disenrolled } from '../../../server/core/enrolment/ports.ts';
import { moduleName, nodeName } from '../../../server/core/names.ts';
import { ExitCode } from '../../common/exit-codes.ts';
import { action, type CommandContext, nodeModuleArgument, usage } from '../command-context.ts';
import type { Output } from '../output.ts';

/** What the control plane answers a removal (lib/server/api/handlers/mesh-removals.ts). */
type RemovalAnswer = {
  removed: { node: string | null; modules: Array<{ node: string; module: string }>; relations: string[] };
  behind: string[];
};

/** A relation's two arguments, `NODE/MODULE PROVIDER-NODE/MODULE`, and its route's path. */
const relationArguments = z
  .object({ consumer: nodeModuleArgument, provider: nodeModuleArgument })
  .transform(({ consumer, provider }) => ({
    consumer,
    path: `/nodes/${consumer.node}/modules/${consumer.module}/consumes/${provider.node}/${provider.module}`,
  }));

/**
 * Registers the commands that take away: `mesh unconsume`, `mesh unassign`, `mesh node remove`,
 * `mesh node disenrol` and `mesh rotate`. Each says what it took and which nodes are behind
 * because of it; one push delivers them all.
 */
export function registerRemovalCommands(program: Command): void {
  const node = program.commands.find((command) => command.name() === 'node') ?? program.command('node');

  relationCommand(
    program,
    'unconsume',
    'withdraw NODE/MODULE as a consumer of PROVIDER-NODE/MODULE: the provision and the grant',
    async ({ api, output }, { consumer, path }) =>
      removed(output, await api.call<RemovalAnswer>('DELETE', path), `mesh push ${consumer.node}`),
  );

  program
    .command('unassign')
    .description(
      'take MODULE off NODE, with what it consumes; --cascade also withdraws the modules consuming it',
    )
    .argument('<node>', 'the node')
    .argument('<module>', 'the module')
    .option('--cascade', 'also withdraw every relation to it from other modules', false)
    .action(
      action(async ({ api, output }, rawNode: string, rawModule: string, options: { cascade: boolean }) => {
        const parsed = z
          .object({ node: nodeName, module: moduleName })
          .safeParse({ node: rawNode, module: rawModule });
        if (!parsed.success) return usage(output, parsed.error);
        const query = options.cascade ? '?cascade=true' : '';
        const answer = await api.call<RemovalAnswer>(
          'DELETE',
          `/nodes/${parsed.data.node}/modules/${parsed.data.module}${query}`,
        );
        return removed(output, answer, `mesh push ${parsed.data.node}`);
      }),
    );

  node
    .command('remove')
    .description(
      'take NODE out of the mesh with its token and host identity; --cascade also withdraws its consumers',
    )
    .argument('<node>', 'the node')
    .option('--cascade', 'also withdraw every relation other nodes have to its providers', false)
    .action(
      action(async ({ api, output }, raw: string, options: { cascade: boolean }) => {
        const parsed = nodeName.safeParse(raw);
        if (!parsed.success) return usage(output, parsed.error);
        const answer = await api.call<RemovalAnswer>(
          'DELETE',
          `/nodes/${parsed.data}${options.cascade ? '?cascade=true' : ''}`,
        );
        return removed(output, answer, 'mesh push --behind');
      }),
    );

  node
    .command('disenrol')
    .description(
      "revoke NODE's host identity (keys, enrolment, token); the node stays, its host must enrol again",
    )
    .argument('<node>', 'the node')
    .action(
      action(async ({ api, output }, raw: string) => {
        const parsed = nodeName.safeParse(raw);
        if (!parsed.success) return usage(output, parsed.error);
        const answer = await api.call<Disenrolled>('DELETE', `/nodes/${parsed.data}/enrolment`);
        output.result(answer);
        output.line(
          `disenrolled ${answer.node}: ${answer.keysRevoked} key${answer.keysRevoked === 1 ? '' : 's'} revoked${
            answer.wasEnrolled ? '' : ' (it had no completed enrolment)'
          }; its host is refused from now on. To enrol it again: mesh token issue ${answer.node}`,
        );
        return ExitCode.ok;
      }),
    );

  relationCommand(
    program,
    'rotate',
    'mint a new secret for the provision NODE/MODULE has from PROVIDER-NODE/MODULE',
    async ({ api, output }, { consumer, path }) => {
      const answer = await api.call<{ rotated: string; behind: string[] }>('POST', `${path}/rotate`, {});
      output.result(answer);
      output.line(
        `rotated the secret of ${answer.rotated}; behind now: ${answer.behind.join(', ')}; mesh push ${consumer.node} delivers both sides`,
      );
      return ExitCode.ok;
    },
  );
}

/** A command on one relation, `NODE/MODULE PROVIDER-NODE/MODULE`, run with both parsed. */
function relationCommand(
  program: Command,
  name: string,
  description: string,
  run: (context: CommandContext, relation: z.infer<typeof relationArguments>) => Promise<ExitCode>,
): void {
  program
    .command(name)
    .description(description)
    .argument('<consumer>', 'NODE/MODULE')
    .argument('<provider>', 'PROVIDER-NODE/MODULE')
    .action(
      action(async (context, rawConsumer: string, rawProvider: string) => {
        const parsed = relationArguments.safeParse({ consumer: rawConsumer, provider: rawProvider });
        if (!parsed.success) return usage(context.output, parsed.error);
        return run(context, parsed.data);
      }),
    );
}

function removed(output: Output, answer: RemovalAnswer, next: string): ExitCode {
  output.result(answer);
  const { node, modules, relations } = answer.removed;
  const what = [
    ...(node ? [`node ${node}, its token and its host identity`] : []),
    ...modules.filter(() => !node).map((m) => `module ${m.module} from ${m.node}`),
    ...(relations.length > 0 ? [`${relations.length} relation${relations.length === 1 ? '' : 's'}`] : []),
  ];
  output.line(`removed ${what.join(', ')}`);
  for (const relation of relations) output.line(`  withdrawn: ${relation}`);
  output.line(
    answer.behind.length > 0
      ? `behind now: ${answer.behind.join(', ')}; ${next} delivers the change`
      : 'no other node is changed by it',
  );
  return ExitCode.ok;
}
