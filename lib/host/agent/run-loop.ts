import { type CodedLine, type Said, say as sayLine } from '../../core/coded-lines.ts';
import type { SignalChannel } from '../../core/signal/channel.ts';
import { type AgentLog, agentLines } from '../lines.ts';
import { modulesOfDeclaration } from './declared-modules.ts';
import { ControlPlaneUnavailableError, CredentialRefusedError, SequenceAheadRefusedError } from './errors.ts';
import type {
  AgentState,
  AgentStateStore,
  Applier,
  ControlPlane,
  DeclarationOpener,
  HostReport,
  SignalLink,
} from './ports.ts';
import { SignalWatch } from './signal-watch.ts';

/** While on the signal, the host fetches anyway this often (`--safety-interval`). */
export const defaultSafetyIntervalMs = 6 * 3600 * 1000;

/** The first wait before a report that could not be sent is sent again; it doubles up to `maxBackoffMs`. */
const reportRetryFirstMs = 1_000;

export type RunLoopOptions = {
  readonly controlPlane: ControlPlane;
  /** Opens what is sealed to the node before the apply command sees the declaration. */
  readonly opener: DeclarationOpener;
  readonly applier: Applier;
  readonly state: AgentStateStore;
  /** How often to ask for the declaration while not on the signal (no broker, or the broker away). */
  readonly intervalMs: number;
  /** How often to say "still here" when nothing changes, while polling. @default 180_000 */
  readonly heartbeatMs?: number;
  /** The connection to the broker; without it the agent polls. */
  readonly signalLink?: SignalLink;
  /** Where the node's signal is (enrolment.json); the declaration route names it too. */
  readonly channel?: SignalChannel;
  /** Keeps a channel the control plane named. */
  readonly onChannel?: (channel: SignalChannel) => Promise<void>;
  /** While on the signal, fetch anyway this often. @default 6 h */
  readonly safetyIntervalMs?: number;
  /** The longest wait between attempts while the control plane is away. @default 60_000 */
  readonly maxBackoffMs?: number;
  /**
   * Called when the control plane holds no enrolment for the key in use: answers whether a
   * newer key took its place (a rotation), in which case the loop goes on with it. Without it,
   * or when it answers false, the node was disenrolled or removed and the loop ends.
   */
  readonly keyRefused?: () => Promise<boolean>;
  /** Where its lines go (lib/host/lines.ts): `mesh-host run` prints them. */
  readonly log: AgentLog;
  readonly signal: AbortSignal;
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly random?: () => number;
};

/**
 * The host's loop: fetch the declaration when it changes, apply it, report applying / applied /
 * failed with the revision, and ride out a control plane that is away with backoff and jitter.
 * On the signal (connected to the broker, signal-watch.ts) it fetches once on connecting, then
 * when a signal names a change, and every safety interval; the broker's presence events say it
 * is there, so it sends no heartbeat. Without the broker it polls every interval and says
 * "still here" now and then. A report that cannot be sent waits and is sent again after a
 * backoff of its own, whether on the signal or polling (on the signal nothing else may come for
 * hours); a newer one replaces it, as the control plane would set the older one aside anyway.
 */
export async function runHostAgent(options: RunLoopOptions): Promise<'stopped' | 'decommissioned'> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  const heartbeatMs = options.heartbeatMs ?? 180_000;
  const maxBackoffMs = options.maxBackoffMs ?? 60_000;
  const safetyIntervalMs = options.safetyIntervalMs ?? defaultSafetyIntervalMs;
  const { controlPlane, applier, signal } = options;
  const log = <Fields extends object>(line: CodedLine<Fields>, fields: Fields) =>
    options.log(sayLine(line, fields));

  let state: AgentState = await options.state.load();
  const watch = new SignalWatch({
    link: options.signalLink,
    channel: options.channel,
    ...(options.onChannel ? { onChannel: options.onChannel } : {}),
    appliedEtag: () => state.appliedEtag,
    pollSeconds: options.intervalMs / 1000,
    log: options.log,
    now,
    random,
  });
  // A fetch is due at the start, after a failure, and when the poll or safety interval comes round.
  let fetchDue = true;
  let nextPollAt = 0;
  let safetyAt = 0;
  let pending: HostReport | undefined;
  // Sends of the waiting report that failed in a row, and when it is tried again.
  let reportFailures = 0;
  let reportRetryAt = 0;
  // Starting counts as being heard: the first heartbeat is due one interval after the start.
  let lastHeard = now();
  let failures = 0;
  let waitingFor = '';

  /** Writes the opened declaration where the apply command reads it (0600) and runs the command. */
  const applyOpened = async (body: string, revision: number) => {
    const path = await options.state.writeDeclaration(body);
    log(agentLines.applying, { revision });
    await report({ state: 'applying', revision, step: 'apply' });
    const applied = await applier.apply(path, revision, signal);
    return applied.ok ? applied : { ...applied, step: 'apply' as const };
  };

  /** Says a waiting line once, not again while it would say the same. */
  const say = <Fields extends object>(line: CodedLine<Fields>, fields: Fields) => {
    const said: Said = sayLine(line, fields);
    if (said.message !== waitingFor) options.log(said);
    waitingFor = said.message;
  };

  const report = async (fields: Omit<HostReport, 'sequence' | 'sentAt'>) => {
    // Grows across restarts even if the state file is lost: never below the clock.
    const sequence = Math.max(state.lastSequence + 1, now());
    state = { ...state, lastSequence: sequence };
    await options.state.save(state);
    pending = { ...fields, sequence, sentAt: new Date(now()).toISOString() };
    await flushReport();
  };

  // A report that cannot be sent never holds up applying: it waits, and a newer one replaces it.
  const flushReport = async () => {
    const waiting = pending;
    if (!waiting) return;
    try {
      await controlPlane.sendReport(waiting);
      lastHeard = now();
      pending = undefined;
      reportFailures = 0;
    } catch (error) {
      if (signal.aborted) return;
      reportFailures += 1;
      const hinted = error instanceof ControlPlaneUnavailableError ? error.retryAfterSeconds : undefined;
      const backoff = Math.min(maxBackoffMs, reportRetryFirstMs * 2 ** Math.min(reportFailures - 1, 10));
      reportRetryAt = now() + Math.round((hinted ? hinted * 1000 : backoff) * (0.5 + random() / 2));
      if (error instanceof SequenceAheadRefusedError && waiting.sequence > now()) {
        // Grown from a clock that once ran ahead: start again from this clock, within what is taken.
        const sequence = Math.min(now(), error.latestAccepted);
        log(agentLines.sequenceReset, {
          sequence: waiting.sequence,
          latestAccepted: error.latestAccepted,
          restartedAt: sequence,
        });
        state = { ...state, lastSequence: sequence };
        await options.state.save(state);
        if (pending === waiting) pending = { ...waiting, sequence };
        return flushReport();
      }
      say(agentLines.reportWaiting, {
        state: waiting.state,
        revision: waiting.revision,
        reason: (error as Error).message,
      });
    }
  };

  while (!signal.aborted) {
    try {
      watch.rearm();
      await flushReport();
      await watch.connectIfDue();
      const due = fetchDue || watch.fetchOwed || now() >= (watch.connected ? safetyAt : nextPollAt);
      if (!due) {
        await wait();
        continue;
      }
      const news = watch.fetchStarting();
      const fetched = await controlPlane.fetchDeclaration(state.appliedEtag);
      if (fetched.signal) await watch.learn(fetched.signal);
      if (failures > 0) log(agentLines.controlPlaneBack, { failures });
      failures = 0;
      if (fetched.status === 'not-sent') {
        say(agentLines.waitingFirst, {});
      } else if (fetched.status === 'unchanged') {
        say(agentLines.upToDate, { revision: state.appliedRevision ?? null });
      } else {
        waitingFor = '';
        const modules = modulesOfDeclaration(fetched.body);
        const declared = modules ? { modules } : {};
        const opened = await options.opener.open(fetched.body);
        const result = opened.ok
          ? await applyOpened(opened.body, fetched.revision)
          : ({ ok: false, reason: opened.reason, step: 'open' } as const);
        if (signal.aborted) break;
        if (result.ok) {
          state = { ...state, appliedEtag: fetched.etag, appliedRevision: fetched.revision };
          await options.state.save(state);
          log(agentLines.applied, { revision: fetched.revision });
          await report({ state: 'applied', revision: fetched.revision, step: 'apply', ...declared });
        } else {
          log(result.step === 'open' ? agentLines.openFailed : agentLines.applyFailed, {
            revision: fetched.revision,
            reason: result.reason,
          });
          await report({
            state: 'failed',
            revision: fetched.revision,
            step: `${result.step}: ${result.reason}`.slice(0, 200),
            ...declared,
          });
          watch.fetched(news);
          await waitAfterFailedApply(Math.min(maxBackoffMs, options.intervalMs * 5));
          fetchDue = true;
          continue;
        }
      }
      fetchDue = false;
      watch.fetched(news);
      nextPollAt = now() + options.intervalMs;
      safetyAt = now() + safetyIntervalMs;
      await wait();
    } catch (error) {
      if (signal.aborted) break;
      if (error instanceof CredentialRefusedError && error.code === 'not_enrolled') {
        if (await options.keyRefused?.()) {
          log(agentLines.keyRotated, {});
          fetchDue = true;
          continue;
        }
        log(agentLines.decommissioned, { reason: error.message });
        await watch.close();
        return 'decommissioned';
      }
      fetchDue = true;
      failures += 1;
      const hinted = error instanceof ControlPlaneUnavailableError ? error.retryAfterSeconds : undefined;
      const backoff = Math.min(maxBackoffMs, options.intervalMs * 2 ** Math.min(failures, 10));
      const delay = Math.round((hinted ? hinted * 1000 : backoff) * (0.5 + random() / 2));
      const reason =
        error instanceof CredentialRefusedError
          ? `the control plane refused this node's key (${error.message}); is it enrolled?`
          : error instanceof ControlPlaneUnavailableError
            ? error.message
            : `unexpected: ${(error as Error).message}`;
      say(agentLines.retrying, { seconds: delay / 1000, reason });
      waitingFor = '';
      await sleep(delay, signal);
    }
  }
  await watch.close();
  log(agentLines.stopped, {});
  return 'stopped';

  /**
   * A failed revision is not marked applied, so it is tried again; not at once, so a broken hook
   * does not spin. A signal naming a change ends the wait, as does a lost connection (the host
   * then catches up on what it may have missed): the fix an operator sends (a rollout's next
   * upgrade, say) is applied when it comes, not a minute later.
   */
  async function waitAfterFailedApply(ms: number): Promise<void> {
    const until = now() + ms;
    while (!signal.aborted && !watch.fetchOwed && now() < until) {
      watch.rearm();
      await sleep(until - now(), AbortSignal.any([signal, watch.wakeSignal()]));
    }
  }

  /**
   * Polling, says "still here" when due, then waits for the next poll (or the next try of the
   * broker); on the signal, waits for a signal, the broker going away, or the safety fetch.
   */
  async function wait(): Promise<void> {
    if (!watch.connected) {
      // A heartbeat never replaces a state report still waiting to be sent: that report says more.
      if (now() - lastHeard >= heartbeatMs && (pending === undefined || pending.state === 'heartbeat')) {
        await report({ state: 'heartbeat', revision: state.appliedRevision ?? 0 });
      }
    }
    const until = Math.min(
      watch.connected ? safetyAt : Math.min(nextPollAt, now() + (watch.msUntilAttempt() ?? Infinity)),
      pending ? reportRetryAt : Infinity,
    );
    await sleep(Math.max(0, until - now()), AbortSignal.any([signal, watch.wakeSignal()]));
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
