import type { BatchResult, FlowState } from './flow-schemas.ts';
import type { Pusher } from './pusher.ts';

/**
 * A round's candidates. An ordinary push: the marked nodes (every node for the audit's first
 * round), what this push's mints marked. A wave: its nodes first, then only the nodes its sends
 * pair with that are marked, so a consumer and its provider go out in the same wave and nothing
 * else that is behind does.
 */
export async function candidatesOf(
  pusher: Pusher,
  state: FlowState,
  hints: readonly string[],
  results: readonly BatchResult[],
): Promise<string[]> {
  const wave = state.request.nodes;
  if (wave) {
    if (state.round === 0) return [...wave];
    return pusher.markedOf([...new Set(results.flatMap((result) => result.paired))]);
  }
  const found = await pusher.candidates(state.request.full && state.round === 0);
  return [...new Set([...found, ...state.hints, ...hints])];
}
