import { driveRunning } from '../core/rollout/drive.ts';
import { RolloutKicks } from '../core/rollout/ports.ts';
import { asFunction } from './call-record.ts';
import type { LocalService } from './services.ts';

/** The function that steps a rollout on AWS (lib/functions/rollouts.ts). */
const advanceFunction = 'rollout-advance';

/** How often the local driver steps every running rollout: a wave's answers are read this often. */
export const rolloutTickMs = 1_000;

/**
 * The rollout driver of the local runtime (docs/decisions/rollouts-in-waves.md): on start it
 * finds every running rollout by its record and steps it, then again each tick, and at once when
 * a rollout starts or resumes in this process. Stopping waits for the step under way, so a
 * runtime stopped mid-rollout leaves its record whole for the next start to go on from.
 */
export const rolloutDriverService: LocalService = {
  name: 'the rollout driver',
  async start(parts) {
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
      // driveRunning logs what fails; a rejection left here would end the process. Its calls
      // are rollout-advance's, as on AWS, not those of the request whose start woke it.
      running = asFunction(advanceFunction, () => driveRunning(parts))
        .then((more) => {
          // a rollout claiming (or letting go of claims) goes on at once: its steps are bounded, not its ticks
          if (more) again = true;
        })
        .catch(() => undefined)
        .finally(() => {
          running = undefined;
          if (stopped) return;
          if (again) {
            again = false;
            setImmediate(tick);
          } else timer = setTimeout(tick, rolloutTickMs);
        });
    };
    const unlisten =
      parts.rolloutDriver instanceof RolloutKicks ? parts.rolloutDriver.listen(tick) : () => undefined;
    tick();
    return {
      async stop() {
        stopped = true;
        unlisten();
        clearTimeout(timer);
        await running;
      },
    };
  },
};
