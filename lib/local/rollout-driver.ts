import { driveRunning } from '../server/core/rollout/drive.ts';
import { RolloutKicks } from '../server/core/rollout/ports.ts';
import type { LocalService } from './services.ts';
import { startTickingDriver } from './ticking-driver.ts';

/** The function that steps a rollout on AWS (lib/server/functions/rollouts.ts). */
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
    return startTickingDriver({
      // its calls are rollout-advance's, as on AWS, not those of the request whose start woke it
      functionName: advanceFunction,
      tickMs: rolloutTickMs,
      // driveRunning logs what fails; a rollout claiming (or letting go of claims) goes on at
      // once: its steps are bounded, not its ticks
      step: () => driveRunning(parts),
      listen: (wake) =>
        parts.rolloutDriver instanceof RolloutKicks ? parts.rolloutDriver.listen(wake) : () => undefined,
    });
  },
};
