import { expect, it } from 'vitest';
import { FaultRig } from '../tools/fleet/fault-rig.ts';
import {
  killedMidPush,
  runScenario,
  type ScenarioResult,
  storeStopped,
} from '../tools/fleet/fault-scenarios.ts';
import { inBed } from './support/bed.ts';

/**
 * The fault matrix's short form (`npm run bench -- faults` runs it whole, at full size): eight
 * hosts' agents report while the store is stopped for 8 s, under a hold bound of 4 s, so some
 * reports are held and recorded and some are let go with their `lost` line; then the control
 * plane is SIGKILLed in the middle of `mesh push --behind` over 48 nodes, and the push run again
 * leaves nothing behind. Every report a host made is recorded, superseded by a newer one of its
 * node, or lost with its line: none silently. The outage is twice the hold bound, as the bench's
 * longer ones outlast theirs, so both ends of a hold are seen.
 */
it(
  'reports through a store outage and a control plane killed mid-push: none lost silently, the push converges',
  () =>
    inBed('reports-through-faults', async (bed) => {
      const rig = new FaultRig({
        processes: bed,
        hosts: 8,
        loadNodes: 40,
        intervalMs: 2_000,
        // Reports come from applies here; a heartbeat in flight at the kill would hold the bed for
        // the queue's visibility timeout before it came back.
        heartbeatMs: 600_000,
        holdBoundSeconds: 4,
        // The consumer's timeout, not the deployed 6×: what the kill catches comes back in 30 s.
        visibilitySeconds: 30,
      });
      // The settle window is an upper bound: a batch the kill caught in flight comes back only after
      // the queue's visibility timeout; otherwise the queue is empty in seconds.
      const timing = { leadInMs: 2_000, tailMs: 3_000, settleMs: 90_000 };
      const results: ScenarioResult[] = [];
      try {
        await rig.start();
        results.push(await runScenario(rig, { ...storeStopped(8), applyMs: [300, 5_000] }, timing));
        results.push(await runScenario(rig, killedMidPush, timing));
      } finally {
        await rig.stop();
      }
      const [outage, killed] = results as [ScenarioResult, ScenarioResult];
      const shown = results.map((result) => ({ ...result, silentReports: result.silentReports.slice(0, 5) }));

      expect(
        results.map((result) => [result.name, result.silent, result.storeDisagrees.length]),
        JSON.stringify(shown, null, 2),
      ).toEqual([
        [outage.name, 0, 0],
        [killed.name, 0, 0],
      ]);
      expect(outage.held, 'the outage held reports').toBeGreaterThan(0);
      expect(outage.lostWithLine, 'the outage outlasted the hold bound for some').toBeGreaterThan(0);
      expect(outage.recorded).toBeGreaterThan(0);
      expect(killed.converged, killed.notes.join('; ')).toBe(true);
      expect(killed.sentBeforeKill?.sent, 'killed once some nodes were sent').toBeGreaterThan(0);
    }),
  420_000,
);
