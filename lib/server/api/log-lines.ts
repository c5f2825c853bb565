import { codedLine } from '../core/coded-lines.ts';

/** What the HTTP edge logs about an answer it gave (docs/codes.md). */
export const edgeLines = {
  tryAgain: codedLine<{ readonly problem: string; readonly reason: string }>(
    'api.try-again',
    'warn',
    ({ reason }) => `answered try again: ${reason}`,
  ),
  failed: codedLine('api.request-failed', 'error', () => 'request failed'),
} as const;
