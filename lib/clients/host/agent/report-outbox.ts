import { type CodedLine, type Said, say as sayLine } from '../../../server/core/coded-lines.ts';
import { agentLines } from '../log-lines.ts';
import { ControlPlaneUnavailableError, SequenceAheadRefusedError } from './errors.ts';
import type { ControlPlane, HostReport } from './ports.ts';

/** The first wait before a report that could not be sent is sent again; it doubles up to `maxBackoffMs`. */
const reportRetryFirstMs = 1_000;

export type OutboxOptions = {
  readonly controlPlane: ControlPlane;
  /** The next sequence: never below the clock, one more than the last (kept in the agent's state). */
  readonly nextSequence: () => Promise<number>;
  /** Counts again from `sequence` after the control plane refused one too far ahead of its clock. */
  readonly restartSequence: (sequence: number) => Promise<void>;
  /** A report was taken: the control plane was reached. */
  readonly onSent: (report: HostReport) => void;
  /** Says a line (the run loop's, said once while it would say the same). */
  readonly say: <Fields extends object>(line: CodedLine<Fields>, fields: Fields) => void;
  readonly log: (said: Said) => void;
  readonly now: () => number;
  readonly random: () => number;
  readonly maxBackoffMs: number;
  readonly signal: AbortSignal;
};

/**
 * The report waiting to be sent. A report that cannot be sent never holds up applying: it waits
 * and is sent again after a backoff of its own (from a second, doubling to the most, or the
 * `Retry-After`); a newer one replaces it, as the control plane would set the older one aside
 * anyway.
 */
export class ReportOutbox {
  readonly #options: OutboxOptions;
  #pending: HostReport | undefined;
  /** Sends of the waiting report that failed in a row, and when it is tried again. */
  #failures = 0;
  #retryAt = 0;

  constructor(options: OutboxOptions) {
    this.#options = options;
  }

  get pending(): HostReport | undefined {
    return this.#pending;
  }

  /** When the waiting report is tried again; infinite when none waits. */
  get retryAt(): number {
    return this.#pending ? this.#retryAt : Number.POSITIVE_INFINITY;
  }

  /**
   * Numbers the report, puts it in place of any waiting one, and sends it. A heartbeat never
   * replaces a state report still waiting (that one says more): it is sent again, numbered anew,
   * with the heartbeat's health and outputs.
   */
  async send(fields: Omit<HostReport, 'sequence' | 'sentAt'>): Promise<void> {
    const sequence = await this.#options.nextSequence();
    const waiting = this.#pending;
    const merged =
      fields.state === 'heartbeat' && waiting && waiting.state !== 'heartbeat'
        ? { ...withoutHealth(waiting), ...healthOf(fields), ...(fields.facts ? { facts: fields.facts } : {}) }
        : fields;
    this.#pending = { ...merged, sequence, sentAt: new Date(this.#options.now()).toISOString() };
    await this.flush();
  }

  /** Sends the waiting report, if one waits. */
  async flush(): Promise<void> {
    const { controlPlane, now, random, maxBackoffMs, signal } = this.#options;
    const waiting = this.#pending;
    if (!waiting) return;
    try {
      await controlPlane.sendReport(waiting);
      if (this.#pending === waiting) this.#pending = undefined;
      this.#failures = 0;
      this.#options.onSent(waiting);
    } catch (error) {
      if (signal.aborted) return;
      this.#failures += 1;
      const hinted = error instanceof ControlPlaneUnavailableError ? error.retryAfterSeconds : undefined;
      const backoff = Math.min(maxBackoffMs, reportRetryFirstMs * 2 ** Math.min(this.#failures - 1, 10));
      this.#retryAt = now() + Math.round((hinted ? hinted * 1000 : backoff) * (0.5 + random() / 2));
      if (error instanceof SequenceAheadRefusedError && waiting.sequence > now()) {
        // Grown from a clock that once ran ahead: start again from this clock, within what is taken.
        const sequence = Math.min(now(), error.latestAccepted);
        this.#options.log(
          sayLine(agentLines.sequenceReset, {
            sequence: waiting.sequence,
            latestAccepted: error.latestAccepted,
            restartedAt: sequence,
          }),
        );
        await this.#options.restartSequence(sequence);
        if (this.#pending === waiting) this.#pending = { ...waiting, sequence };
        return this.flush();
      }
      this.#options.say(agentLines.reportWaiting, {
        state: waiting.state,
        revision: waiting.revision,
        reason: (error as Error).message,
      });
    }
  }
}

const withoutHealth = ({
  health: _health,
  output: _output,
  sequence: _sequence,
  sentAt: _sentAt,
  ...rest
}: HostReport) => rest;
const healthOf = (report: Pick<HostReport, 'health' | 'output'>) => ({
  ...(report.health ? { health: report.health } : {}),
  ...(report.output ? { output: report.output } : {}),
});
