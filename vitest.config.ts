import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
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
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'beds',
          include: ['beds/**/*.bed.test.ts'],
          testTimeout: 180_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
      {
        // The rehearsal's judge: every AWS call recorded by the projects before it, judged against
        // the synthesized template (docs/rehearsal.md). Its global setup turns the recording on for
        // the whole run. It must run after integration, console and beds: those need an explicit
        // groupOrder below this one, or vitest puts them (fileParallelism: false) after every group.
        test: {
          name: 'rehearsal',
          include: ['test/rehearsal/**/*.test.ts'],
          globalSetup: ['test/support/rehearsal.global.ts'],
          sequence: { groupOrder: 9 },
          testTimeout: 120_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
