import { logLine, say } from '../server/core/coded-lines.ts';
import { pushLines } from '../server/core/mesh/log-lines.ts';
import { driveRunning, flowPollSeconds } from '../server/core/rollout/drive.ts';
import { RolloutKicks, type RolloutStore } from '../server/core/rollout/ports.ts';
import type { Rollouts } from '../server/core/rollout/service.ts';
import type { Parts } from '../server/wiring/parts.ts';
import type { LocalService } from './services.ts';
import { historyEvents, SteppingHistory } from './stepping-history.ts';
import { startTickingDriver } from './ticking-driver.ts';

/** The function that steps a rollout on AWS (lib/server/functions/rollouts.ts). */
const advanceFunction = 'rollout-advance';

/** How often the local driver steps every running rollout: a wave's answers are read this often. */
export const rolloutTickMs = 1_000;

/**
 * The rollout driver of the local runtime (docs/decisions/rollouts-in-waves.md): on start it
 * finds every running rollout by its record and steps it, then again each tick, and at once when
 * a rollout starts or resumes in this process. Stopping waits for the step under way, so a
 * runtime stopped mid-rollout leaves its record whole for the next start to go on from. Each
 * rollout's execution history is counted as the rollout flow's would be (`historyOfRollouts`): one
 * that passes Standard's 25,000 events dies, and its record is stepped no more.
 */
export const rolloutDriverService: LocalService = {
  name: 'the rollout driver',
  async start(parts) {
    const history = new SteppingHistory('rollout flow');
    const deps = historyOfRollouts(parts, history);
    return startTickingDriver({
      // its calls are rollout-advance's, as on AWS, not those of the request whose start woke it
      functionName: advanceFunction,
      tickMs: rolloutTickMs,
      // driveRunning logs what fails; a rollout claiming (or letting go of claims) goes on at
      // once: its steps are bounded, not its ticks
      step: () => driveRunning(deps),
      listen: (wake) =>
        parts.rolloutDriver instanceof RolloutKicks
          ? parts.rolloutDriver.listen((id) => {
              // a start or a resume starts a new execution on AWS
              history.started(id);
              wake();
            })
          : () => undefined,
    });
  },
};

/**
 * The driver's view of the rollouts, counting each one's history as its Standard execution
 * would: a loop of the flow (Advance, Finished, Wait) for each step that sends or ends, and for
 * a rollout that waits or claims, one loop each `flowPollSeconds` (the flow's Task goes on
 * claiming, and its Wait lasts up to that long, so AWS loops no faster). A rollout whose history
 * passed the limit is not stepped: its record stays `running`, as a dead execution leaves it.
 */
export function historyOfRollouts(
  parts: Pick<Parts, 'rollouts' | 'rolloutStore' | 'log'>,
  history: SteppingHistory,
  now: () => number = Date.now,
): { readonly rollouts: Rollouts; readonly rolloutStore: RolloutStore; readonly log: Parts['log'] } {
  const lastLoop = new Map<string, number>();
  const rollouts = Object.create(parts.rollouts, {
    step: {
      value: async (id: string) => {
        const stepped = await parts.rollouts.step(id);
        const kind = stepped.decision.kind;
        const looping =
          kind === 'send' || !['wait', 'idle', 'claiming', 'claimed', 'releasing'].includes(kind);
        const at = now();
        if (looping || at - (lastLoop.get(id) ?? Number.NEGATIVE_INFINITY) >= flowPollSeconds * 1000) {
          lastLoop.set(id, at);
          const died = history.record(id, historyEvents.loop);
          if (died)
            logLine(
              parts.log,
              say(pushLines.rolloutStepFailed, { rollout: id, reason: `${died.name}: ${died.message}` }),
            );
        }
        return stepped;
      },
    },
  }) as Rollouts;
  const rolloutStore = Object.create(parts.rolloutStore, {
    running: {
      value: async () => (await parts.rolloutStore.running()).filter((id) => !history.dead(id)),
    },
  }) as RolloutStore;
  return { rollouts, rolloutStore, log: parts.log };
}
