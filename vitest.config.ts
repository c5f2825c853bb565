import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from 'vitest/config';
import RunOrder from './test/support/run-order.ts';

/**
 * How the run is ordered (vitest runs one `sequence.groupOrder` after another, each group's files
 * on its own workers):
 * - 0: unit, cdk, integration, package and the beds, their files side by side on one
 *   worker more than there are cores. The beds spend much of their time waiting on the processes
 *   they started (hosts applying, a queue's visibility, a store's outage); beside the integration
 *   tests, which are CPU from end to end, those waits are filled, and the machine is busy to the
 *   end of the run (on two cores: 373 s, against 416 s with the beds in a group after the rest
 *   on two workers). The cdk tests read a synthesis of the template alone (no esbuild: seconds),
 *   and the one synthesis with every function bundled (a minute or more of CPU) is the package
 *   project's test/package/function-bundles.test.ts, so it overlaps the integration tests instead
 *   of holding up the template's readers (docs/rehearsal.md, "One synthesis of each kind per run").
 *   Each bed's control plane has ports of its own (free ones, MQTT too) and table names of its
 *   own on the run's DynamoDB Local (beds/support/bed.ts, `Bed.prefix`); a bed that stops a
 *   store or kills a control plane stops its own (`Bed.startStore`, the fault rig's store and
 *   queue), never a shared one. On a loaded machine a host's report once did not reach the store
 *   within two minutes; two ways load did that are closed: a receive a stalled control plane
 *   gave up hid its messages for the queue's visibility (lib/local/event-source.ts,
 *   `pollerRequestTimeoutMs`), and a host on the signal kept a report it could not send until
 *   its next signal (lib/clients/host/agent/run-loop.ts). A bed that fails by load is worse than a slow
 *   one: `sequence: { groupOrder: 1 }` on the beds is the way back to running them after the rest;
 * - 1: the console's browser tests, one file at a time: one seeds 10,000 nodes into the run's
 *   DynamoDB Local (minutes of writes that held up every test beside it);
 * - 2: the rehearsal's judge of every AWS call the projects before it recorded, against the
 *   template-only synthesis group 0 made.
 * A project that sets `fileParallelism: false` needs a groupOrder of its own: with the default
 * order vitest would run it after every numbered group, whatever the numbers say.
 */
const workers = availableParallelism() + 1;

// Every Node process of the run (the workers, and each control plane, host and CLI a test starts,
// which inherit the environment) keeps V8's compiled code between starts: a `mesh` command then
// starts on a third of the CPU. What is cached is keyed by each file's content, never stale.
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'mesh-test-compile-cache');

export default defineConfig({
  test: {
    reporters: ['default', './test/support/summary-reporter.ts'],
    maxWorkers: workers,
    // the package project's files and the beds first within a group (test/support/run-order.ts)
    sequence: { sequencer: RunOrder },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Files share a worker's imports (CPU 58 s isolated, 26 s shared): unit tests hold no
          // global state between files (`vitest run --project unit --sequence.shuffle` passes too).
          isolate: false,
          setupFiles: ['test/support/no-network.setup.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // Files share a worker's imports (the project took 153 s and 276 s of CPU so, against
          // 193 s and 337 s isolated): each provisions tables and queues of its own under a random
          // prefix and holds no global state (`--sequence.shuffle.files` passes too).
          isolate: false,
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
          // aws-cdk-lib takes seconds of CPU to import; its files share one import per worker
          // (they build their own apps and stacks and touch no global state).
          isolate: false,
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
          // after group 0, one file at a time: the fleet test's 10,000 nodes are written into the
          // run's one DynamoDB Local for minutes, and beside it other tests' requests waited past
          // their limits (the integration tests', and the other console file's)
          sequence: { groupOrder: 1 },
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'beds',
          include: ['beds/**/*.bed.test.ts'],
          // the run's DynamoDB Local, for the beds that do not stop a store of their own
          globalSetup: ['test/support/emulators.global.ts'],
          // A deadline, not a measure: side by side on a busy machine a bed of six hosts took
          // past three minutes. Files side by side (the default), in a group of their own.
          testTimeout: 600_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The rehearsal's judge: every AWS call recorded by the projects before it, judged against
        // the synthesized template (docs/rehearsal.md). Its global setup turns the recording on for
        // the whole run, so it runs last.
        test: {
          name: 'rehearsal',
          include: ['test/rehearsal/**/*.test.ts'],
          globalSetup: ['test/support/rehearsal.global.ts'],
          sequence: { groupOrder: 2 },
          testTimeout: 120_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
