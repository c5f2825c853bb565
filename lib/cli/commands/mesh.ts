import type { Command } from 'commander';

/** Registers the mesh area's `mesh` commands. */
export function registerMeshCommands(_program: Command): void {}
