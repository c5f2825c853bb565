import { StoreUnavailableError } from '../../core/control/errors.ts';
import type { ControlSender, Outgoing, Queued } from '../../core/control/ports.ts';
import { Problem } from '../problem.ts';

/** The HTTP edge for the control routes: a queue that cannot take the message is "try again". */
export function mapControlError(error: unknown): Problem | undefined {
  if (error instanceof StoreUnavailableError) {
    return new Problem(503, 'try_again', 'the control queue cannot take messages just now; try again', {
      cause: error,
      headers: { 'retry-after': '2' },
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
