import { logLine, say } from '../server/core/coded-lines.ts';
import { pushLines } from '../server/core/mesh/log-lines.ts';
import { describeCause } from '../server/core/unavailable.ts';
import type { SteppingTaskHandler } from '../server/functions/spec.ts';
import { functionSpecs } from '../server/functions/table.ts';
import { localLambdaContext } from './lambda-context.ts';
import { LocalApplyFlow } from './local-apply-flow.ts';
import type { LocalService } from './services.ts';
import { historyEvents, SteppingHistory } from './stepping-history.ts';
import { startTickingDriver } from './ticking-driver.ts';

/** The function that advances an apply job on AWS (lib/server/functions/mesh.ts), the apply flow's one Task. */
const advanceFunction = 'mesh-apply-advance';

/** How often the local driver looks for a running job it was not told of, or asks again after a failed part. */
export const applyJobTickMs = 2_000;

/**
 * The apply flow of the local runtime (docs/mesh-file.md, "An apply as a job"), as the rollout
 * driver is the rollout flow's: on start it finds the running job by its record and advances it
 * part after part with mesh-apply-advance's own handler and time, at once when a job starts in
 * this process, and each tick otherwise. A part that failed (the store away) is logged and taken
 * again on the next tick, as the flow's Retry would. Stopping waits for the part under way, so
 * a runtime stopped mid-job leaves it for the next start to go on with.
 */
export const applyJobDriverService: LocalService = {
  name: 'the apply job driver',
  async start(parts) {
    const spec = functionSpecs.find((row) => row.name === advanceFunction);
    if (spec?.trigger !== 'apply-flow') throw new Error(`no apply-flow function named ${advanceFunction}`);
    const advance = spec.handler(parts) as SteppingTaskHandler;
    const timeoutMs = (spec.timeoutSeconds ?? 10) * 1000;
    // each part is one loop of the apply flow's Standard execution (lib/local/stepping-history.ts)
    const history = new SteppingHistory('apply flow');
    /** One part of the running job, if one runs; true when the driver should look again at once. */
    const part = async (): Promise<boolean> => {
      const held = await parts.applyJobs.running();
      if (!held || history.dead(held.id)) return false;
      try {
        const step = (await advance({ id: held.id }, localLambdaContext(advanceFunction, timeoutMs))) as {
          readonly finished: boolean;
          readonly waitSeconds: number;
        };
        const died = history.record(held.id, historyEvents.loop);
        if (died) {
          logLine(
            parts.log,
            say(pushLines.applyJobStepFailed, { job: held.id, reason: `${died.name}: ${died.message}` }),
          );
          return false;
        }
        // a job its request still holds is looked at again on the next tick, as the flow waits
        return step.finished || step.waitSeconds === 0;
      } catch (error) {
        logLine(parts.log, say(pushLines.applyJobStepFailed, { job: held.id, reason: describeCause(error) }));
        return false;
      }
    };
    return startTickingDriver({
      functionName: advanceFunction,
      tickMs: applyJobTickMs,
      step: part,
      listen: (wake) =>
        parts.applyFlow instanceof LocalApplyFlow
          ? parts.applyFlow.listen((id) => {
              history.started(id);
              wake();
            })
          : () => undefined,
    });
  },
};
