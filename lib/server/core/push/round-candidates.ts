import type { BatchResult, FlowState } from './flow-schemas.ts';
import type { Pusher } from './pusher.ts';
import { type PushWork, readPage, workKeys } from './work.ts';

/**
 * A round's candidates. An ordinary push: the marked nodes (every node for the audit's first
 * round), what this push's mints marked. A wave: its nodes first, then only the nodes its sends
 * pair with that are marked, so a consumer and its provider go out in the same wave and nothing
 * else that is behind does.
 */
export async function candidatesOf(
  pusher: Pusher,
  work: PushWork,
  state: FlowState,
  hints: readonly string[],
  results: readonly BatchResult[],
): Promise<string[]> {
  if (state.request.pairing) {
    if (state.round === 0) return readPage(work, state.work, workKeys.wave);
    return pusher.markedOf([...new Set(results.flatMap((result) => result.paired))]);
  }
  const found = await pusher.candidates(state.request.full && state.round === 0);
  return [...new Set([...found, ...hints])];
}
