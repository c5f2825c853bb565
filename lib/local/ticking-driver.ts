import { invocation } from './aws-quotas.ts';
import { asFunction } from './call-record.ts';

export type TickingDriverOptions = {
  /** The function whose calls the step's are on AWS (the flow's Task), for the call record. */
  readonly functionName: string;
  /** The wait between steps when the last had nothing more to do. */
  readonly tickMs: number;
  /** One step; true when there is more to do at once. A rejection is dropped: the step logs its own. */
  readonly step: () => Promise<boolean>;
  /** Wakes the driver at once (a flow started in this process); answers how to stop listening. */
  readonly listen: (wake: () => void) => () => void;
};

/**
 * How the local runtime stands in for a Step Functions flow that steps a record (the rollout's,
 * the apply job's): one step at a time under the flow Task's name, again at once while a step
 * says there is more or a wake came during it, else after `tickMs`. Stopping waits for the step
 * under way, so a runtime stopped midway leaves the record for the next start to go on from.
 */
export function startTickingDriver(options: TickingDriverOptions): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let again = false;
  let running: Promise<void> | undefined;
  const tick = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    // a rejection left here would end the process
    running = invocation(options.functionName, () => asFunction(options.functionName, options.step))
      .then((more) => {
        if (more) again = true;
      })
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
        if (stopped) return;
        if (again) {
          again = false;
          setImmediate(tick);
        } else timer = setTimeout(tick, options.tickMs);
      });
  };
  const unlisten = options.listen(tick);
  tick();
  return {
    async stop() {
      stopped = true;
      unlisten();
      clearTimeout(timer);
      await running;
    },
  };
}
