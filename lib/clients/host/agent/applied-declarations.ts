import { type CodedLine, type Said, say } from '../../../server/core/coded-lines.ts';
import { type RevertCause, unhealthyStep } from '../../../server/core/health.ts';
import { agentLines } from '../log-lines.ts';
import { modulesOfDeclaration } from './declared-modules.ts';
import type { HealthWatch } from './health-watch.ts';
import { fitTails, Redactor, secretsOf, tailOf } from './output-tail.ts';
import type { AgentState, FetchedDeclaration, GoodDeclaration, HostReport } from './ports.ts';
import type { RunLoopOptions } from './run-loop.ts';

type Modules = Readonly<Record<string, string | null>>;
/** A declaration as applied: what a verdict is about, and what a revert gives up. */
type Applied = GoodDeclaration & { readonly modules?: Modules | undefined };
type Changed = Extract<FetchedDeclaration, { status: 'changed' }>;

export type AppliedDeclarationsDeps = {
  readonly options: Pick<
    RunLoopOptions,
    'opener' | 'applier' | 'state' | 'revertOnFailure' | 'revertAfterCutoffMs' | 'now'
  >;
  readonly health: HealthWatch;
  readonly state: () => AgentState;
  readonly setState: (next: Partial<AgentState>) => Promise<void>;
  /** Sends a report; the health and the outputs are added from `said()`. */
  readonly report: (fields: Omit<HostReport, 'sequence' | 'sentAt' | 'health' | 'output'>) => Promise<void>;
  readonly log: (said: Said) => void;
};

/**
 * The declarations this node applies (docs/host-agent.md): each opened, written for the apply
 * command and applied, then judged by the check (health-watch.ts); one applied and healthy (or
 * applied, with no check) is kept on disk as the last good; with `--revert-on-failure`, one whose
 * apply command fails or whose check does not pass within the grace is given up for the last
 * good, applied again; with `--revert-after-cutoff`, so is one after which the control plane
 * could not be reached for that long (and a declaration is good only once it was reached after it). Every output that leaves the node is redacted of the
 * secrets of the declarations it may have printed (output-tail.ts).
 */
export class AppliedDeclarations {
  readonly #deps: AppliedDeclarationsDeps;
  readonly #now: () => number;
  #good: GoodDeclaration | undefined;
  /** Applied by this process: what the check's verdict is about; unknown after a start until the next apply. */
  #current: Applied | undefined;
  /** The declaration the apply command was last handed: the check is handed it too. */
  #declarationPath: string | undefined;
  #applyTail: string | undefined;
  /** The declarations whose secrets are redacted, and their redactor, built when first needed. */
  #secretsOf: ReadonlyArray<string | undefined> = [];
  #redactor: Redactor | undefined;
  /** After an apply, until the control plane is reached: when, and what a cut-off gives up. */
  #cutoff: { readonly since: number; readonly from: Applied } | undefined;
  /**
   * The declaration applied, until it is good: healthy (or with no check), and, with a cut-off,
   * the control plane reached after it. Then it is kept as the last good (`keepIfGood`).
   */
  #candidate: { readonly applied: Applied; healthy: boolean; reached: boolean } | undefined;

  constructor(deps: AppliedDeclarationsDeps) {
    this.#deps = deps;
    this.#now = deps.options.now ?? Date.now;
  }

  /** At a start: the last good kept, the declaration last written, and the revision applied to judge. */
  async start(): Promise<void> {
    const { state } = this.#deps.options;
    this.#good = await state.lastGood();
    const written = await state.readDeclaration();
    this.#declarationPath = written?.path;
    this.#redactFrom([written?.body, this.#good?.body]);
    const revision = this.#deps.state().appliedRevision;
    if (revision !== undefined) this.#deps.health.applied(revision);
  }

  /** What every report says besides its state: the health, and the ends of the outputs. */
  said(): Pick<HostReport, 'health' | 'output'> {
    const output = fitTails(this.#applyTail, this.#deps.health.tail);
    return { health: this.#deps.health.health, ...(output.apply || output.check ? { output } : {}) };
  }

  /** The control plane answered: a change applied did not cut this node off. */
  reached(): void {
    this.#cutoff = undefined;
    if (this.#candidate) this.#candidate.reached = true;
  }

  /** Keeps the declaration applied as the last good once it is (healthy, and reached when that is asked). */
  async keepIfGood(): Promise<void> {
    const candidate = this.#candidate;
    if (!candidate?.healthy || !candidate.reached) return;
    this.#candidate = undefined;
    const { revision, etag, body } = candidate.applied;
    const good = { revision, etag, body };
    await this.#deps.options.state.keepGood(good);
    this.#good = good;
  }

  /** How long until the check or a cut-off is due. */
  msUntilDue(): number | undefined {
    const cutoffMs = this.#deps.options.revertAfterCutoffMs;
    const cutoff =
      this.#cutoff && cutoffMs !== undefined
        ? Math.max(0, this.#cutoff.since + cutoffMs - this.#now())
        : undefined;
    const due = [this.#deps.health.msUntilDue(), cutoff].filter((ms) => ms !== undefined);
    return due.length > 0 ? Math.min(...due) : undefined;
  }

  /**
   * Opens, writes and applies a changed declaration, reporting applying, then applied or failed;
   * `failed` when it failed and was not given up for the last good (tried again later).
   */
  async apply(fetched: Changed, signal: AbortSignal): Promise<'applied' | 'failed' | 'reverted'> {
    const { opener, applier, state } = this.#deps.options;
    const { revision, etag } = fetched;
    const modules = modulesOfDeclaration(fetched.body);
    const declared = modules ? { modules } : {};
    this.#applyTail = undefined;
    const opened = await opener.open(fetched.body);
    if (!opened.ok) {
      this.#say(agentLines.openFailed, { revision, reason: opened.reason });
      await this.#deps.report({
        state: 'failed',
        revision,
        step: `open: ${opened.reason}`.slice(0, 200),
        ...declared,
      });
      return 'failed';
    }
    this.#redactFrom([opened.body, this.#good?.body]);
    const path = await state.writeDeclaration(opened.body);
    this.#declarationPath = path;
    this.#say(agentLines.applying, { revision });
    await this.#deps.report({ state: 'applying', revision, step: 'apply' });
    const result = await applier.apply(path, revision, signal);
    if (signal.aborted) return 'failed';
    this.#applyTail = this.#tail(result.output);
    const applied: Applied = { revision, etag, body: opened.body, modules };
    if (result.ok) {
      await this.#deps.setState({ revertedEtag: undefined, appliedEtag: etag, appliedRevision: revision });
      this.#current = applied;
      this.#deps.health.applied(revision);
      const cutoff = this.#deps.options.revertAfterCutoffMs !== undefined;
      if (cutoff) this.#cutoff = { since: this.#now(), from: applied };
      // With no check, applied is as healthy as it gets.
      this.#candidate = { applied, healthy: !this.#deps.health.judging, reached: !cutoff };
      this.#say(agentLines.applied, { revision });
      await this.#deps.report({ state: 'applied', revision, step: 'apply', ...declared });
      return 'applied';
    }
    this.#say(agentLines.applyFailed, { revision, reason: result.reason });
    const step = `apply: ${result.reason}`.slice(0, 200);
    if (this.#deps.options.revertOnFailure && (await this.#revert(applied, 'failed', step, signal)))
      return 'reverted';
    await this.#deps.report({ state: 'failed', revision, step, ...declared });
    return 'failed';
  }

  /**
   * Runs the check when due; reports a change of health; keeps the revision judged healthy as the
   * last good; gives up one judged unhealthy for the last good, with `--revert-on-failure`.
   */
  async checkHealth(signal: AbortSignal): Promise<void> {
    const { health } = this.#deps;
    const path = this.#declarationPath;
    if (path === undefined) return;
    const outcome = await health.runIfDue(path, signal, (output) => this.#tail(output));
    if (!outcome) return;
    const now = health.health;
    const judged = this.#current?.revision === now.revision ? this.#current : undefined;
    if (outcome.changed && now.state === 'unhealthy')
      this.#say(agentLines.unhealthy, { revision: now.revision, reason: now.reason ?? 'the check failed' });
    else if (outcome.changed) this.#say(agentLines.healthy, { revision: now.revision });
    if (
      outcome.judged === 'unhealthy' &&
      judged &&
      // The last good one judged again (after a revert) is not gone back from: there is nothing before it.
      judged.etag !== this.#good?.etag &&
      this.#deps.options.revertOnFailure &&
      (await this.#revert(judged, 'unhealthy', unhealthyStep(now.reason), signal))
    )
      return;
    if (outcome.changed) await this.#deps.report({ state: 'heartbeat', revision: now.revision });
    const candidate = this.#candidate;
    if (now.state === 'healthy' && candidate?.applied.revision === now.revision) candidate.healthy = true;
  }

  /** Gives the declaration applied up for the last good when the control plane was not reached for the cut-off. */
  async cutOffIfDue(signal: AbortSignal): Promise<void> {
    const cut = this.#cutoff;
    const cutoffMs = this.#deps.options.revertAfterCutoffMs;
    if (!cut || cutoffMs === undefined || this.#now() - cut.since < cutoffMs) return;
    this.#cutoff = undefined;
    const seconds = cutoffMs / 1000;
    this.#say(agentLines.cutOff, { revision: cut.from.revision, seconds });
    const step = `cut-off: the control plane could not be reached for ${seconds} s after revision ${cut.from.revision} was applied`;
    await this.#revert(cut.from, 'cut-off', step.slice(0, 200), signal);
  }

  /**
   * Applies the last good declaration again in place of `from`, which is given up (not applied
   * again until a newer revision comes), and reports `from` failed with the revert. False when
   * there is no other good declaration to go back to.
   */
  async #revert(from: Applied, cause: RevertCause, step: string, signal: AbortSignal): Promise<boolean> {
    const { applier, state } = this.#deps.options;
    const good = this.#good;
    if (!good || good.etag === from.etag) {
      this.#say(agentLines.revertNone, { revision: from.revision, cause });
      return false;
    }
    this.#say(agentLines.reverting, { from: from.revision, to: good.revision, cause });
    this.#candidate = undefined;
    this.#redactFrom([from.body, good.body]);
    const path = await state.writeDeclaration(good.body);
    this.#declarationPath = path;
    const again = await applier.apply(path, good.revision, signal);
    if (signal.aborted) return true;
    this.#cutoff = undefined;
    const againModules = modulesOfDeclaration(good.body);
    if (again.ok) {
      await this.#deps.setState({
        appliedEtag: good.etag,
        appliedRevision: good.revision,
        revertedEtag: from.etag,
      });
      this.#current = { ...good, modules: againModules };
      this.#deps.health.applied(good.revision);
      this.#say(agentLines.reverted, { from: from.revision, to: good.revision });
    } else {
      this.#applyTail = this.#tail(again.output) ?? this.#applyTail;
      await this.#deps.setState({ revertedEtag: from.etag });
      this.#say(agentLines.revertFailed, { to: good.revision, reason: again.reason });
    }
    await this.#deps.report({
      state: 'failed',
      revision: from.revision,
      step,
      ...(from.modules ? { modules: from.modules } : {}),
      revert: { to: good.revision, cause, ok: again.ok, ...(againModules ? { modules: againModules } : {}) },
    });
    return true;
  }

  /** What may leave the node of an output: its redacted end; the redactor is built on first need. */
  #tail(output: string | undefined): string | undefined {
    if (output === undefined || output.trim() === '') return undefined;
    this.#redactor ??= new Redactor(this.#secretsOf.flatMap((body) => (body ? secretsOf(body) : [])));
    return tailOf(output, this.#redactor);
  }

  #redactFrom(bodies: ReadonlyArray<string | undefined>): void {
    if (bodies.length === this.#secretsOf.length && bodies.every((body, at) => body === this.#secretsOf[at]))
      return;
    this.#secretsOf = bodies;
    this.#redactor = undefined;
  }

  #say<Fields extends object>(line: CodedLine<Fields>, fields: Fields): void {
    this.#deps.log(say(line, fields));
  }
}
