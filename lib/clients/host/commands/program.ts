import type { Command } from 'commander';
import { exitingProgram, loadCommands, type Register } from '../../common/lazy-program.ts';

/**
 * Each command's module, loaded only when the command line names it: `mesh-host enrol` does
 * not load the run loop's MQTT client and apply machinery, nor `run` the enrolment's.
 */
const hostCommands = {
  enrol: async () => (await import('./enrol.ts')).registerEnrolCommand,
  run: async () => (await import('./run.ts')).registerRunCommand,
  rotate: async () => (await import('./rotate.ts')).registerRotateCommand,
  supervise: async () => (await import('./supervise.ts')).registerSuperviseCommand,
} satisfies Record<string, () => Promise<Register>>;

export type HostCommand = keyof typeof hostCommands;

/** Every command, in the order `mesh-host --help` lists them. */
export const allHostCommands = Object.keys(hostCommands) as HostCommand[];

const isHostCommand = (word: string | undefined): word is HostCommand =>
  word !== undefined && Object.hasOwn(hostCommands, word);

/** The `mesh-host` program with the command `argv` (as process.argv) names, else all of them. */
export async function hostProgram(argv: readonly string[]): Promise<Command> {
  const word = argv.slice(2).find((arg) => !arg.startsWith('-'));
  const commands = isHostCommand(word) ? [word] : allHostCommands;
  const program = exitingProgram('mesh-host', 'The Mesh host agent: enrol this machine, then run it');
  return loadCommands(program, hostCommands, commands);
}
