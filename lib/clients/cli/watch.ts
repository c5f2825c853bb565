import type { ExitCode } from '../common/exit-codes.ts';
import { ApiUnreachableError } from '../http/api-client.ts';
import type { Output } from './output.ts';
import { cliLines } from './output-lines.ts';

/** `--interval` of `--watch`: 1 to 3600 seconds, written `2s`, `1m`. */
export function intervalMs(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,3})(s|m)$/.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * (match[2] === 'm' ? 60_000 : 1_000);
  return ms <= 3_600_000 ? ms : undefined;
}

/** A `--timeout` of `mesh wait`: `90s`, `10m`, `2h`, up to a day. */
export function timeoutMs(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,5})(s|m|h)$/.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[match[2] as 's' | 'm' | 'h'];
  return ms <= 86_400_000 ? ms : undefined;
}

/** What one round of a watch printed: whether the watch is over, and how it ends. */
export type WatchRound = { readonly done: boolean; readonly exit: ExitCode };

/**
 * `--watch`, as `watch` and `kubectl get -w` do: the view printed again every interval, on a
 * terminal over the last one (the screen cleared), elsewhere one after another under a line
 * with the time; under --json one document a round. Ends when a round says it is over (a
 * rollout ended) with that round's exit, else runs until Ctrl-C.
 */
export async function watching(
  output: Output,
  title: string,
  everyMs: number,
  round: () => Promise<WatchRound>,
  streams: { readonly out: NodeJS.WriteStream } = { out: process.stdout },
): Promise<ExitCode> {
  for (;;) {
    const at = new Date().toISOString().slice(11, 19);
    if (!output.json) {
      if (streams.out.isTTY) streams.out.write('\x1b[H\x1b[2J');
      output.line(`Every ${everyMs / 1000}s: ${title}  (${at} UTC)`);
    }
    try {
      const { done, exit } = await round();
      if (done) return exit;
    } catch (error) {
      // a control plane away for a moment is said and watched through, as `watch` would
      if (!(error instanceof ApiUnreachableError)) throw error;
      output.say(cliLines.unreachable, { reason: error.message });
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The usage problem of a bad --interval, or the interval. */
export const checkedInterval = (text: string) =>
  intervalMs(text) ?? { argument: '--interval', problem: 'an interval is 1s to 60m, written 2s or 1m' };
