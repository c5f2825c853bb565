import { codedLine } from '../coded-lines.ts';

/** What the signal's side of the control plane logs (docs/codes.md): a signal not published, a node's presence. */
export const signalLines = {
  notPublished: codedLine<{ readonly node: string; readonly revision: number; readonly reason: string }>(
    'signal.not-published',
    'warn',
    ({ node, revision }) =>
      `the signal of ${node} for revision ${revision} was not published; its host catches up on its next connect or safety fetch`,
  ),
  connectRefused: codedLine<{
    readonly problem: string;
    readonly username: string | undefined;
    readonly clientId: string | undefined;
    readonly connection: string | undefined;
  }>('signal.connect-refused', 'warn', ({ problem }) => `refused a broker connect: ${problem}`),
  eventDropped: codedLine<{ readonly event: string }>(
    'signal.event-dropped',
    'warn',
    () => 'dropped a lifecycle event that names no node',
  ),
  presence: codedLine<{ readonly node: string; readonly state: string; readonly at: string }>(
    'signal.presence',
    'info',
    ({ node, state }) => `node ${node} ${state}`,
  ),
  presenceStale: codedLine<{ readonly node: string; readonly state: string; readonly at: string }>(
    'signal.presence-stale',
    'info',
    ({ node, state }) => `kept the newer presence of ${node} over a late ${state}`,
  ),
  presenceUnknown: codedLine<{ readonly node: string; readonly state: string; readonly at: string }>(
    'signal.presence-unknown',
    'warn',
    ({ node }) => `presence of ${node}, which is not a node of the mesh`,
  ),
} as const;
