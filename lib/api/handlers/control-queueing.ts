import { StoreUnavailableError } from '../../core/control/errors.ts';
import type { ControlSender, Outgoing, Queued } from '../../core/control/ports.ts';
import { type Problem, tryAgainProblem } from '../problem.ts';

/** The HTTP edge for the control routes: a queue that cannot take the message is "try again". */
export function mapControlError(error: unknown): Problem | undefined {
  if (error instanceof StoreUnavailableError) {
    return tryAgainProblem('the control queue cannot take messages just now', {
      retryAfterSeconds: 2,
      cause: error,
    });
  }
  return undefined;
}

/** Puts one message on the control queue and says what was queued. */
export async function queueOne(sender: ControlSender, outgoing: Outgoing): Promise<Queued> {
  const [queued] = await sender.send([outgoing]);
  if (!queued) throw new StoreUnavailableError('putting a message on the control queue');
  return queued;
}
