import type { Command } from 'commander';

/** Registers the control area's `mesh` commands. */
export function registerControlCommands(_program: Command): void {}
