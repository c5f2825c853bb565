import type { Command } from 'commander';

/** Registers the enrolment area's `mesh` commands. */
export function registerEnrolmentCommands(_program: Command): void {}
