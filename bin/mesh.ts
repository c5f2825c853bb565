#!/usr/bin/env node
import { Command } from 'commander';
import { addGlobalOptions } from '../lib/cli/command-context.ts';
import { registerAuditCommands } from '../lib/cli/commands/audit.ts';
import { registerConsoleCommand } from '../lib/cli/commands/console.ts';
import { registerControlCommands } from '../lib/cli/commands/control.ts';
import { registerCorrections } from '../lib/cli/commands/corrections.ts';
import { registerEnrolmentCommands } from '../lib/cli/commands/enrolment.ts';
import { registerMeshCommands } from '../lib/cli/commands/mesh.ts';
import { registerMeshFileCommands } from '../lib/cli/commands/mesh-file.ts';
import { registerPushCommand } from '../lib/cli/commands/push.ts';
import { registerRemovalCommands } from '../lib/cli/commands/removals.ts';
import { registerRolloutCommands } from '../lib/cli/commands/rollout.ts';
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
registerMeshFileCommands(program);
registerPushCommand(program);
registerRolloutCommands(program);
registerRemovalCommands(program);
registerEnrolmentCommands(program);
registerControlCommands(program);
registerCorrections(program);
registerSeeingCommands(program);
registerAuditCommands(program);
registerConsoleCommand(program);
registerSigV4Signer();
// No top-level await: the packaged executables run this file as CommonJS (Node's single
// executable applications start CommonJS), and an unhandled rejection still exits 1.
void program.parseAsync(process.argv);
