/**
 * What any handler may take, whatever its area: the log, the clock, counted occurrences. Each
 * area keeps its own ports in its ports.ts (lib/server/core/<area>/ports.ts), and an area that
 * uses another's imports them from there; nothing here names an area.
 */

/** Where the control plane's lines go: Powertools' logger on AWS and locally, a recording one in tests. */
export type Log = {
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
};

/** What a handler is given as its clock: the wiring's, or a test's fixed one. */
export type Clock = () => Date;

/**
 * Occurrences counted during an invocation and published once after it, as one metric
 * (lib/server/adapters/counted-metric.ts), so quiet invocations publish nothing.
 */
export interface CountedOccurrences {
  publish(): Promise<void>;
}
