#!/usr/bin/env node
import { Command } from 'commander';
import { addGlobalOptions } from '../lib/cli/command-context.ts';
import { registerConsoleCommand } from '../lib/cli/commands/console.ts';
import { registerControlCommands } from '../lib/cli/commands/control.ts';
import { registerEnrolmentCommands } from '../lib/cli/commands/enrolment.ts';
import { registerMeshCommands } from '../lib/cli/commands/mesh.ts';
import { registerSeeingCommands } from '../lib/cli/commands/seeing.ts';
import { ExitCode } from '../lib/cli/exit-codes.ts';
import { registerSigV4Signer } from '../lib/cli/sigv4.ts';

const program = addGlobalOptions(
  new Command('mesh').description(
    'Operate a Mesh control plane: nodes, modules, relations, push, tokens, queue',
  ),
);
program.exitOverride((error) => {
  process.exit(error.exitCode === 0 ? ExitCode.ok : ExitCode.usage);
});
registerMeshCommands(program);
registerEnrolmentCommands(program);
registerControlCommands(program);
registerSeeingCommands(program);
registerConsoleCommand(program);
registerSigV4Signer();
await program.parseAsync(process.argv);
