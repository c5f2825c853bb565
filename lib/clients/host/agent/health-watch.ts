import type { ReportedHealth } from '../../../server/core/health.ts';
import { firstLine } from './output-tail.ts';
import type { HealthCheck } from './ports.ts';

/** `--check-interval`, `--check-grace` and `--check-timeout` by default. */
export const defaultCheckIntervalMs = 30_000;
export const defaultCheckGraceMs = 30_000;
export const defaultCheckTimeoutMs = 10_000;

export type HealthOptions = {
  /** The operator's check (`--check`); without it the node's health is `unknown` and never checked. */
  readonly check?: HealthCheck | undefined;
  /** How often the check runs once it has a verdict. */
  readonly intervalMs: number;
  /** How long the check may fail, after an apply or after it passed, before the node is unhealthy. */
  readonly graceMs: number;
};

/** What one run of the check came to. */
export type CheckOutcome = {
  /** The node's health changed: a report says so. */
  readonly changed: boolean;
  /** The verdict on the revision last applied, said once, when it is first known. */
  readonly judged?: 'healthy' | 'unhealthy';
};

/**
 * The node's health as the agent knows it (docs/host-agent.md, "Health"). After an apply the
 * verdict on that revision is still to come (`unknown`, with a check): the check runs at once and
 * again every retry until it passes (healthy) or the grace runs out (unhealthy). Then it runs
 * every interval; a healthy node whose check fails is tried again at the retry's pace, and is
 * unhealthy only once it has failed for the whole grace, so one slow answer does not flap it.
 */
export class HealthWatch {
  readonly #options: HealthOptions;
  readonly #now: () => number;
  #health: ReportedHealth;
  #tail: string | undefined;
  /** After an apply: since when the verdict on its revision has been owed. */
  #judging: number | undefined;
  /** A healthy node's check failing: since when. */
  #failingSince: number | undefined;
  #dueAt = Number.POSITIVE_INFINITY;

  constructor(options: HealthOptions, now: () => number) {
    this.#options = options;
    this.#now = now;
    this.#health = { state: 'unknown', check: options.check !== undefined, revision: 0 };
  }

  get health(): ReportedHealth {
    return this.#health;
  }

  /** The end of the check's last output, redacted. */
  get tail(): string | undefined {
    return this.#tail;
  }

  /** Between tries while the check fails within its grace: a sixth of the grace, from 0.2 s to 5 s. */
  get retryMs(): number {
    return Math.min(5_000, Math.max(200, Math.round(this.#options.graceMs / 6)));
  }

  /** Whether the verdict on the revision applied is still owed: a wave waits on it. */
  get judging(): boolean {
    return this.#judging !== undefined;
  }

  /** A revision was applied (or applied again, or found applied at a start): its verdict is owed. */
  applied(revision: number): void {
    const check = this.#options.check !== undefined;
    this.#health = { state: 'unknown', check, revision };
    this.#failingSince = undefined;
    this.#judging = check ? this.#now() : undefined;
    this.#dueAt = check ? this.#now() : Number.POSITIVE_INFINITY;
  }

  /** How long until the check is due; undefined without a check or a revision to check. */
  msUntilDue(): number | undefined {
    if (!this.#options.check || this.#health.revision === 0) return undefined;
    return Math.max(0, this.#dueAt - this.#now());
  }

  /**
   * Runs the check when it is due, on the declaration at `path`; `redact` makes what may leave
   * the node of its output. Undefined when nothing was due.
   */
  async runIfDue(
    path: string,
    signal: AbortSignal,
    redact: (output: string) => string | undefined,
  ): Promise<CheckOutcome | undefined> {
    const due = this.msUntilDue();
    const check = this.#options.check;
    if (due === undefined || due > 0 || !check) return undefined;
    const { revision } = this.#health;
    const result = await check.check(path, revision, signal);
    if (signal.aborted) return undefined;
    const at = this.#now();
    const checkedAt = new Date(at).toISOString();
    this.#tail = redact(result.output);
    const before = this.#health.state;
    const judged = this.#judging !== undefined;
    if (result.healthy) {
      this.#failingSince = undefined;
      this.#judging = undefined;
      this.#health = { state: 'healthy', check: true, revision, checkedAt };
      this.#dueAt = at + this.#options.intervalMs;
      return { changed: before !== 'healthy', ...(judged ? { judged: 'healthy' as const } : {}) };
    }
    if (before !== 'unhealthy') {
      this.#failingSince ??= at;
      const since = this.#judging ?? this.#failingSince;
      if (at - since < this.#options.graceMs) {
        this.#dueAt = Math.min(at + this.retryMs, since + this.#options.graceMs);
        return { changed: false };
      }
    }
    this.#judging = undefined;
    const reason = firstLine(this.#tail) ?? result.reason;
    this.#health = { state: 'unhealthy', check: true, revision, checkedAt, reason };
    this.#dueAt = at + this.#options.intervalMs;
    return { changed: before !== 'unhealthy', ...(judged ? { judged: 'unhealthy' as const } : {}) };
  }
}
