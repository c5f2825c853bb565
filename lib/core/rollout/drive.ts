import { logLine, say } from '../coded-lines.ts';
import { pushLines } from '../mesh/lines.ts';
import type { Log } from '../ports.ts';
import { describeCause } from '../unavailable.ts';
import { RolloutRaceError } from './errors.ts';
import type { RolloutStore } from './ports.ts';
import type { Rollouts } from './service.ts';

/**
 * One tick of a rollout driver: every running rollout (found by its record, so a driver that
 * starts again resumes them all) is stepped once. A step another driver won is left to it; a
 * step that failed is logged and taken again on the next tick, which the record makes safe.
 */
export async function driveRunning(
  deps: { readonly rollouts: Rollouts; readonly rolloutStore: RolloutStore; readonly log: Log },
  only?: readonly string[],
): Promise<void> {
  const ids = only ?? (await deps.rolloutStore.running());
  for (const id of ids) {
    try {
      const { decision } = await deps.rollouts.step(id);
      if (decision.kind === 'wait' || decision.kind === 'idle') continue;
      const reason =
        decision.kind === 'send'
          ? `wave ${decision.wave + 1}: ${decision.nodes.length} nodes`
          : 'reason' in decision
            ? decision.reason
            : undefined;
      logLine(
        deps.log,
        say(pushLines.rolloutMoved, { rollout: id, decision: decision.kind, ...(reason ? { reason } : {}) }),
      );
    } catch (error) {
      if (error instanceof RolloutRaceError) continue;
      logLine(deps.log, say(pushLines.rolloutStepFailed, { rollout: id, reason: describeCause(error) }));
    }
  }
}
