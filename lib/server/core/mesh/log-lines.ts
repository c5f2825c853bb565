import { codedLine } from '../coded-lines.ts';

/**
 * What a push logs when keeping its record fails (docs/codes.md): the push goes on, and the
 * record says less than it could. An operator's alarm reads these codes.
 */
export const pushLines = {
  recordNotKept: codedLine<{ readonly pushId: string; readonly state: string; readonly reason: string }>(
    'push.record-not-kept',
    'warn',
    ({ pushId, state }) => `could not keep the record of push ${pushId} (${state})`,
  ),
  progressNotNoted: codedLine<{ readonly pushId: string; readonly reason: string }>(
    'push.progress-not-noted',
    'warn',
    ({ pushId }) => `could not note the progress of push ${pushId}`,
  ),
  runFailed: codedLine<{ readonly pushId: string; readonly reason: string }>(
    'push.run-failed',
    'warn',
    ({ pushId }) => `push ${pushId} failed; its record names what failed`,
  ),
  rolloutMoved: codedLine<{ readonly rollout: string; readonly decision: string; readonly reason?: string }>(
    'push.rollout-moved',
    'info',
    ({ rollout, decision, reason }) => `rollout ${rollout}: ${decision}${reason ? ` (${reason})` : ''}`,
  ),
  rolloutStepFailed: codedLine<{ readonly rollout: string; readonly reason: string }>(
    'push.rollout-step-failed',
    'warn',
    ({ rollout, reason }) => `rollout ${rollout}: a step failed (${reason}); the next tick takes it again`,
  ),
  applyJobFailed: codedLine<{ readonly job: string; readonly reason: string }>(
    'apply.job-failed',
    'error',
    ({ job }) => `apply job ${job} failed unexpectedly; its record says \`internal\``,
  ),
  applyJobStepFailed: codedLine<{ readonly job: string; readonly reason: string }>(
    'apply.job-step-failed',
    'warn',
    ({ job, reason }) => `apply job ${job}: a part failed (${reason}); it is taken again`,
  ),
} as const;
