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
} as const;
