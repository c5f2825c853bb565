import type { Command } from 'commander';
import { exitingProgram, loadCommands, type Register } from '../../common/lazy-program.ts';
import { addGlobalOptions } from '../command-context.ts';

/**
 * Each module of commands, loaded only when the command line names one of its commands: a
 * `mesh` call pays for the modules it runs, not for the mesh file's parser, the console's
 * server and every other command's (a fleet's scripts call it thousands of times).
 */
const commandModules = {
  mesh: async () => (await import('./mesh.ts')).registerMeshCommands,
  meshFile: async () => (await import('./mesh-file.ts')).registerMeshFileCommands,
  push: async () => (await import('./push.ts')).registerPushCommand,
  rollout: async () => (await import('./rollout.ts')).registerRolloutCommands,
  freezes: async () => (await import('./freezes.ts')).registerFreezeCommands,
  removals: async () => (await import('./removals.ts')).registerRemovalCommands,
  enrolment: async () => (await import('./enrolment.ts')).registerEnrolmentCommands,
  control: async () => (await import('./control.ts')).registerControlCommands,
  retractAndReset: async () => (await import('./retract-and-reset.ts')).registerRetractAndReset,
  views: async () => (await import('./views.ts')).registerViewCommands,
  audit: async () => (await import('./audit.ts')).registerAuditCommands,
  console: async () => (await import('./console.ts')).registerConsoleCommand,
  wait: async () => (await import('./wait.ts')).registerWaitCommand,
  agent: async () => (await import('./agent.ts')).registerAgentCommands,
} satisfies Record<string, () => Promise<Register>>;

export type CommandModule = keyof typeof commandModules;

/** Every module, in the order their commands appear in `mesh --help`. */
export const allCommandModules = Object.keys(commandModules) as CommandModule[];

/**
 * The modules that add to each top-level command (some add subcommands to a command another
 * made, as `node list` to `node`), in registration order. A word not here loads every module,
 * so a command missing from this table still runs; test/unit/cli-program.test.ts holds the
 * table to what the modules register.
 */
export const modulesOfCommand: Readonly<Record<string, readonly CommandModule[]>> = {
  node: ['mesh', 'removals', 'views'],
  assign: ['mesh'],
  consume: ['mesh'],
  status: ['mesh'],
  declaration: ['mesh'],
  export: ['meshFile'],
  diff: ['meshFile'],
  apply: ['meshFile'],
  push: ['push'],
  rollout: ['rollout'],
  freeze: ['freezes'],
  unfreeze: ['freezes'],
  freezes: ['freezes'],
  unconsume: ['removals'],
  unassign: ['removals'],
  rotate: ['removals'],
  token: ['enrolment'],
  build: ['control', 'retractAndReset'],
  upgrade: ['control'],
  'catch-up': ['control'],
  report: ['retractAndReset'],
  pushes: ['views'],
  graph: ['views'],
  audit: ['audit'],
  console: ['console'],
  wait: ['wait'],
  agent: ['agent'],
};

/** Global options that take a value as the next word (command-context.ts). */
const globalOptionsWithValue = new Set(['--api']);

/** The first word of `argv` (as process.argv) that is not an option or an option's value. */
export function commandWord(argv: readonly string[]): string | undefined {
  for (let at = 2; at < argv.length; at += 1) {
    const word = argv[at] as string;
    if (word === '--') return argv[at + 1];
    if (globalOptionsWithValue.has(word)) {
      at += 1;
      continue;
    }
    if (!word.startsWith('-')) return word;
  }
  return undefined;
}

/** The `mesh` program with the commands `argv` can reach: the named command's modules, else all. */
export async function meshProgram(
  argv: readonly string[],
  modules: readonly CommandModule[] = modulesOfCommand[commandWord(argv) ?? ''] ?? allCommandModules,
): Promise<Command> {
  const program = addGlobalOptions(
    exitingProgram('mesh', 'Operate a Mesh control plane: nodes, modules, relations, push, tokens, queue'),
  );
  return loadCommands(program, commandModules, modules);
}
