import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

/** The beds that also run against the rehearsal of the synthesized stack (docs/rehearsal.md says why these). */
const bedsAgainstTheRehearsal = [
  'beds/built-store-cross-node.bed.test.ts',
  'beds/host-restart-mid-apply.bed.test.ts',
  'beds/store-window.bed.test.ts',
  'beds/module-upgrade.bed.test.ts',
];

/**
 * How the run is ordered (vitest runs one `sequence.groupOrder` after another, each group's files
 * on its own workers):
 * - 0: unit, cdk, integration, package and console, their files side by side on every core;
 * - 1: the beds, one at a time, since each is a control plane, hosts and a store, and several
 *   of them time outages and kills;
 * - 2: the rehearsal, alone after the beds, for the same reason.
 * A project that sets `fileParallelism: false` needs a groupOrder of its own: with the default
 * order vitest would run it after every numbered group, whatever the numbers say.
 */
const workers = Math.max(2, availableParallelism());

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    maxWorkers: workers,
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          setupFiles: ['test/support/no-network.setup.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/support/emulators.global.ts'],
          setupFiles: ['test/support/integration.setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 90_000,
        },
      },
      {
        test: {
          name: 'cdk',
          include: ['test/cdk/**/*.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        test: {
          name: 'package',
          include: ['test/package/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 300_000,
        },
      },
      {
        test: {
          name: 'console',
          include: ['test/console/**/*.test.ts'],
          globalSetup: ['test/support/emulators.global.ts'],
          setupFiles: ['test/support/integration.setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 90_000,
        },
      },
      {
        test: {
          name: 'beds',
          include: ['beds/**/*.bed.test.ts'],
          // the run's DynamoDB Local, for the beds that do not stop a store of their own
          globalSetup: ['test/support/emulators.global.ts'],
          sequence: { groupOrder: 1 },
          testTimeout: 180_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        // The synthesized stack itself (npm run rehearse), and beds run against it rather than npm start.
        test: {
          name: 'rehearsal',
          include: ['test/rehearsal/**/*.test.ts', ...bedsAgainstTheRehearsal],
          globalSetup: ['test/support/rehearsal.global.ts'],
          env: { MESH_BED_TARGET: 'rehearsal' },
          // after the beds: its beds and the beds project's would share the two cores
          sequence: { groupOrder: 2 },
          testTimeout: 180_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
