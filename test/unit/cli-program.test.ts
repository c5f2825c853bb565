import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import {
  allCommandModules,
  type CommandModule,
  commandWord,
  meshProgram,
  modulesOfCommand,
} from '../../lib/clients/cli/commands/program.ts';
import { allHostCommands, hostProgram } from '../../lib/clients/host/commands/program.ts';

const argv = (...words: string[]) => ['node', 'mesh', ...words];

/** A command's whole tree as `--help` prints it, each subcommand's help under its path. */
function helpTree(command: Command, path = command.name()): Record<string, string> {
  return Object.assign(
    { [path]: command.helpInformation() },
    ...command.commands.map((sub) => helpTree(sub, `${path} ${sub.name()}`)),
  );
}

/** The top-level commands each module registers, each module on a program of its own. */
async function registeredBy(module: CommandModule): Promise<string[]> {
  const program = await meshProgram(argv(), [module]);
  return program.commands.map((command) => command.name());
}

describe('mesh loads only the command modules the command line names', () => {
  it('names, for every command a module registers, that module among the ones it loads, in order', async () => {
    const expected: Record<string, CommandModule[]> = {};
    for (const module of allCommandModules)
      for (const name of await registeredBy(module)) expected[name] = [...(expected[name] ?? []), module];
    expect(modulesOfCommand).toEqual(expected);
  });

  it('builds each command exactly as the program with every module does', async () => {
    const whole = await meshProgram(argv(), allCommandModules);
    for (const command of whole.commands) {
      const lazy = await meshProgram(argv('--api', 'http://127.0.0.1:1', command.name(), '--json'));
      const built = lazy.commands.find((each) => each.name() === command.name());
      expect(built && helpTree(built), command.name()).toEqual(helpTree(command));
    }
  });

  it('loads every module for help, a word it does not know, or no command at all', async () => {
    const all = (await meshProgram(argv(), allCommandModules)).commands.map((command) => command.name());
    for (const words of [[], ['--help'], ['nodes'], ['--api', 'push', '--json']])
      expect(
        (await meshProgram(argv(...words))).commands.map((command) => command.name()),
        words.join(' '),
      ).toEqual(all);
  });

  it('finds the command word past the global options and their values', () => {
    expect(commandWord(argv('--api', 'http://x', '--json', 'push', 'web'))).toBe('push');
    expect(commandWord(argv('--api=http://x', 'node', 'add', 'web'))).toBe('node');
    expect(commandWord(argv('--json', '--', 'status'))).toBe('status');
    expect(commandWord(argv('--json'))).toBeUndefined();
  });
});

describe('mesh-host loads only the command it runs', () => {
  it('builds each command exactly as the program with every command does', async () => {
    const whole = await hostProgram(['node', 'mesh-host']);
    expect(whole.commands.map((command) => command.name())).toEqual(allHostCommands);
    for (const command of whole.commands) {
      const lazy = await hostProgram(['node', 'mesh-host', command.name(), '--help']);
      expect(lazy.commands.map((each) => each.name())).toEqual([command.name()]);
      expect(helpTree(lazy.commands[0] as Command)).toEqual(helpTree(command));
    }
  });
});
