#!/usr/bin/env node
import { Command } from 'commander';
import { ExitCode } from '../lib/cli/exit-codes.ts';
import { registerEnrolCommand } from '../lib/host/commands/enrol.ts';
import { registerRotateCommand } from '../lib/host/commands/rotate.ts';
import { registerRunCommand } from '../lib/host/commands/run.ts';

/** The host agent. Each subcommand lives in lib/host/commands/<name>.ts and registers itself here. */
const program = new Command('mesh-host').description('The Mesh host agent: enrol this machine, then run it');
program.exitOverride((error) => {
  process.exit(error.exitCode === 0 ? ExitCode.ok : ExitCode.usage);
});
registerEnrolCommand(program);
registerRunCommand(program);
registerRotateCommand(program);
// No top-level await: the packaged executables run this file as CommonJS (Node's single
// executable applications start CommonJS), and an unhandled rejection still exits 1.
void program.parseAsync(process.argv);
