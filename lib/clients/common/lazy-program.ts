import { Command } from 'commander';
import { versionLine } from './build-info.ts';
import { ExitCode } from './exit-codes.ts';

/** What a module of commands exports: it adds its commands to the program. */
export type Register = (program: Command) => void;

/**
 * A program that exits with the CLI's codes (exit-codes.ts) where commander would throw, and
 * prints its version and build with `--version`.
 */
export function exitingProgram(name: string, description: string): Command {
  const program = new Command(name)
    .description(description)
    .version(versionLine(name), '--version', 'print the version and the build, then exit');
  program.exitOverride((error) => {
    process.exit(error.exitCode === 0 ? ExitCode.ok : ExitCode.usage);
  });
  return program;
}

/** Loads the named modules of commands, side by side, and registers them on `program` in order. */
export async function loadCommands<Name extends string>(
  program: Command,
  loaders: Readonly<Record<Name, () => Promise<Register>>>,
  names: readonly Name[],
): Promise<Command> {
  const registers = await Promise.all(names.map((name) => loaders[name]()));
  for (const register of registers) register(program);
  return program;
}
