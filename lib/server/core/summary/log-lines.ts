import { codedLine } from '../coded-lines.ts';

/** What the summary's aggregator logs (docs/codes.md): changes it had to let go. */
export const summaryLines = {
  lost: codedLine<{
    readonly shard: string;
    readonly lost: number;
    readonly first: string;
    readonly last: string;
    readonly reason: string;
  }>(
    'summary.lost',
    'error',
    ({ lost, shard }) =>
      `${lost} changes of shard ${shard} were let go: the summary is not exact until mesh status --summary --rebuild`,
  ),
} as const;
