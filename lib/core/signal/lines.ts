import { codedLine } from '../coded-lines.ts';

/** What the signal's side of the control plane logs (docs/codes.md): a signal not published, a node's presence. */
export const signalLines = {
  notPublished: codedLine<{ readonly node: string; readonly revision: number; readonly reason: string }>(
    'signal.not-published',
    'warn',
    ({ node, revision }) =>
      `the signal of ${node} for revision ${revision} was not published; its host catches up on its next connect or safety fetch`,
  ),
} as const;
