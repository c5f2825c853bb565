import { describe, expect, it } from 'vitest';
import { steppingFlows } from '../../lib/server/flows/stepping-flows.ts';
import { runSteppingFlow } from '../support/history-events.ts';

/** Standard's quota: an execution's history holds at most this many events. */
const historyLimit = 25_000;

/**
 * Issue 38: a job stepped by a Standard flow for hours (a rollout whose wave waits on its hosts,
 * its Advance answering "wait 10 s" each time) never reaches 25,000 history events in one
 * execution: the flow, run from its ASL file, continues as a new execution of itself, named after
 * its run and generation, with the job's id. Five simulated hours here (two executions, about 2 s
 * a flow); `npm run bench -- long-paths` runs 24.
 */
describe('the stepping flows over hours', () => {
  for (const flow of Object.values(steppingFlows))
    it(`${flow.id} continues as a new execution before 25,000 history events`, async () => {
      const { executions, simulated } = await runSteppingFlow(flow.aslPath, 5);
      expect(simulated).toBe(5 * 3_600);
      expect(executions.map((e) => e.name)).toEqual(['job-1-v1', 'job-1-v1-c1']);
      expect(executions.map((e) => e.loops)).toEqual([1_501, 299]);
      // 1,501 loops of 11 events, the start, the end and the continuation: room for retries
      for (const execution of executions) expect(execution.events).toBeLessThan(historyLimit * 0.7);
    }, 30_000);
});
