import { type CodedLine, type Said, say as sayLine } from '../../../server/core/coded-lines.ts';
import type { HostFacts } from '../../../server/core/mesh/host-facts.ts';
import type { SignalChannel } from '../../../server/core/signal/channel.ts';
import { type AgentLog, agentLines } from '../log-lines.ts';
import { AppliedDeclarations } from './applied-declarations.ts';
import { ControlPlaneUnavailableError, CredentialRefusedError } from './errors.ts';
import {
  defaultCheckGraceMs,
  defaultCheckIntervalMs,
  type HealthOptions,
  HealthWatch,
} from './health-watch.ts';
import type {
  AgentState,
  AgentStateStore,
  AgentUpgrader,
  Applier,
  ControlPlane,
  DeclarationOpener,
  HostReport,
  SignalLink,
} from './ports.ts';
import { ReportOutbox } from './report-outbox.ts';
import { SignalWatch } from './signal-watch.ts';

/** While on the signal, the host fetches anyway this often (`--safety-interval`). */
export const defaultSafetyIntervalMs = 6 * 3600 * 1000;

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
  /** The operator's check and its pace (`--check`): without one, health is `unknown`. */
  readonly health?: HealthOptions;
  /** Apply the last good declaration again when a new one fails its apply command or its check. */
  readonly revertOnFailure?: boolean;
  /** After an apply, revert when the control plane cannot be reached for this long (`--revert-after-cutoff`). */
  readonly revertAfterCutoffMs?: number;
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
  /** How long after a lost broker connection the reconnect may come, spread evenly. @default 30 s (signal-watch.ts) */
  readonly reconnectWindowMs?: number;
  /**
   * Called when the control plane holds no enrolment for the key in use: answers whether a
   * newer key took its place (a rotation), in which case the loop goes on with it. Without it,
   * or when it answers false, the node was disenrolled or removed and the loop ends.
   */
  readonly keyRefused?: () => Promise<boolean>;
  /**
   * What the machine is (machine-facts.ts), read at the start and again at most once a minute:
   * said in the first report after the start and whenever it changes. Without it, no facts.
   */
  readonly facts?: () => Promise<HostFacts>;
  /**
   * Installs another agent version when a declaration names one (`agent: {version}`); the loop
   * then ends with 'upgrading' for the supervisor to start it. Without it, the field is the apply
   * command's to read.
   */
  readonly upgrader?: AgentUpgrader;
  /** Called after each report the control plane took: a release on trial is kept on the first (supervisor.ts). */
  readonly onReportTaken?: () => void;
  /** Where its lines go (lib/clients/host/log-lines.ts): `mesh-host run` prints them. */
  readonly log: AgentLog;
  readonly signal: AbortSignal;
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly random?: () => number;
};

/**
 * The host's loop: fetch the declaration when it changes, apply it, report applying / applied /
 * failed with the revision and the node's health, and ride out a control plane that is away with
 * backoff and jitter. On the signal (connected to the broker, signal-watch.ts) it fetches once on
 * connecting, then when a signal names a change, and every safety interval; the broker's presence
 * events say it is there, so it sends no heartbeat. Without the broker it polls every interval
 * and says "still here" now and then. A report that cannot be sent waits (report-outbox.ts). With
 * a check (health-watch.ts) it judges each revision applied and reports each change of health,
 * and with reverts it goes back to its last good declaration when a new one fails
 * (applied-declarations.ts).
 */
export async function runHostAgent(
  options: RunLoopOptions,
): Promise<'stopped' | 'decommissioned' | 'upgrading'> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  const heartbeatMs = options.heartbeatMs ?? 180_000;
  const maxBackoffMs = options.maxBackoffMs ?? 60_000;
  const safetyIntervalMs = options.safetyIntervalMs ?? defaultSafetyIntervalMs;
  const { controlPlane, signal } = options;
  const log = <Fields extends object>(line: CodedLine<Fields>, fields: Fields) =>
    options.log(sayLine(line, fields));

  let state: AgentState = await options.state.load();
  const setState = async (next: Partial<AgentState>) => {
    state = { ...state, ...next };
    await options.state.save(state);
  };
  const watch = new SignalWatch({
    link: options.signalLink,
    channel: options.channel,
    ...(options.onChannel ? { onChannel: options.onChannel } : {}),
    appliedEtag: () => state.appliedEtag,
    pollSeconds: options.intervalMs / 1000,
    log: options.log,
    now,
    random,
    ...(options.reconnectWindowMs !== undefined ? { reconnectWindowMs: options.reconnectWindowMs } : {}),
  });
  const health = new HealthWatch(
    options.health ?? { intervalMs: defaultCheckIntervalMs, graceMs: defaultCheckGraceMs },
    now,
  );
  // Starting counts as being heard: the first heartbeat is due one interval after the start.
  let lastHeard = now();
  // The facts read last, and the ones the control plane last took (none yet in this run).
  let facts: HostFacts | undefined;
  let factsReadAt = Number.NEGATIVE_INFINITY;
  let factsTaken: string | undefined;
  const factsUnsaid = () => (facts && JSON.stringify(facts) !== factsTaken ? { facts } : {});
  const outbox = new ReportOutbox({
    controlPlane,
    nextSequence: async () => {
      // Grows across restarts even if the state file is lost: never below the clock.
      const sequence = Math.max(state.lastSequence + 1, now());
      await setState({ lastSequence: sequence });
      return sequence;
    },
    restartSequence: (sequence) => setState({ lastSequence: sequence }),
    onSent: (sent) => {
      if (sent.facts) factsTaken = JSON.stringify(sent.facts);
      options.onReportTaken?.();
      lastHeard = now();
      declarations.reached();
    },
    say: (line, fields) => say(line, fields),
    log: options.log,
    now,
    random,
    maxBackoffMs,
    signal,
  });
  /** Every report says the node's health and the ends of its outputs (redacted). */
  const report = (fields: Omit<HostReport, 'sequence' | 'sentAt' | 'health' | 'output' | 'facts'>) =>
    outbox.send({ ...fields, ...declarations.said(), ...factsUnsaid() });
  const declarations = new AppliedDeclarations({
    options,
    health,
    state: () => state,
    setState,
    report,
    log: options.log,
  });
  await declarations.start();
  // A fetch is due at the start, after a failure, and when the poll or safety interval comes round.
  let fetchDue = true;
  let nextPollAt = 0;
  let safetyAt = 0;
  // After a failed apply: when it is tried again (a signal naming a change ends that wait).
  let retryFailedAt: number | undefined;
  let failures = 0;
  let waitingFor = '';

  /** Says a waiting line once, not again while it would say the same. */
  const say = <Fields extends object>(line: CodedLine<Fields>, fields: Fields) => {
    const said: Said = sayLine(line, fields);
    if (said.message !== waitingFor) options.log(said);
    waitingFor = said.message;
  };

  while (!signal.aborted) {
    try {
      watch.rearm();
      await outbox.flush();
      await declarations.checkHealth(signal);
      await declarations.cutOffIfDue(signal);
      await declarations.keepIfGood();
      await sayFactsIfChanged();
      await watch.connectIfDue();
      const pace = retryFailedAt ?? (watch.connected ? safetyAt : nextPollAt);
      if (!fetchDue && !watch.fetchOwed && now() < pace) {
        await wait();
        continue;
      }
      const news = watch.fetchStarting();
      const fetched = await controlPlane.fetchDeclaration(state.appliedEtag);
      declarations.reached();
      retryFailedAt = undefined;
      if (fetched.signal) await watch.learn(fetched.signal);
      if (failures > 0) log(agentLines.controlPlaneBack, { failures });
      failures = 0;
      if (fetched.status === 'not-sent') {
        say(agentLines.waitingFirst, {});
      } else if (fetched.status === 'unchanged') {
        say(agentLines.upToDate, { revision: state.appliedRevision ?? null });
      } else if (fetched.etag === state.revertedEtag) {
        say(agentLines.revertedWaiting, {
          revision: fetched.revision,
          applied: state.appliedRevision ?? null,
        });
      } else if (wantsOtherAgent(fetched.body, options.upgrader)) {
        waitingFor = '';
        const version = wantedAgent(fetched.body) as string;
        const attempt = await (options.upgrader as AgentUpgrader).upgrade(version);
        if (attempt.installed) {
          log(agentLines.agentInstalled, { version, revision: fetched.revision });
          await watch.close();
          return 'upgrading';
        }
        // Applied by this agent, the revision would claim a version it does not run: given up, as a revert gives one up.
        log(agentLines.agentNotInstalled, { version, revision: fetched.revision, reason: attempt.reason });
        await report({
          state: 'failed',
          revision: fetched.revision,
          step: `agent: ${attempt.reason}`.slice(0, 200),
        });
        await setState({ revertedEtag: fetched.etag });
      } else {
        waitingFor = '';
        const applied = await declarations.apply(fetched, signal);
        if (signal.aborted) break;
        if (applied === 'failed') {
          watch.fetched(news);
          retryFailedAt = now() + Math.min(maxBackoffMs, options.intervalMs * 5);
          fetchDue = false;
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
      await sleep(Math.min(delay, declarations.msUntilDue() ?? delay), signal);
    }
  }
  await watch.close();
  log(agentLines.stopped, {});
  return 'stopped';

  /**
   * Reads the facts again when a minute has passed, and says them in a heartbeat when the control
   * plane has not taken them yet and no report waiting carries them.
   */
  async function sayFactsIfChanged(): Promise<void> {
    if (!options.facts) return;
    if (now() - factsReadAt >= factsReadEveryMs) {
      facts = await options.facts();
      factsReadAt = now();
    }
    const unsaid = factsUnsaid();
    if (!unsaid.facts) return;
    const pending = outbox.pending;
    if (pending?.facts && JSON.stringify(pending.facts) === JSON.stringify(unsaid.facts)) return;
    await report({ state: 'heartbeat', revision: state.appliedRevision ?? 0 });
  }

  /**
   * Polling, says "still here" when due, then waits for the next poll (or the next try of the
   * broker); on the signal, waits for a signal, the broker going away, or the safety fetch. A
   * failed revision is tried again after its wait, not at once, so a broken hook does not spin;
   * a signal naming a change ends that wait (the fix an operator sends is applied when it comes),
   * as does a lost connection. The check, a report waiting, and a cut-off end any wait when due.
   */
  async function wait(): Promise<void> {
    if (!watch.connected) {
      // A heartbeat never replaces a state report still waiting to be sent: that report says more.
      const pending = outbox.pending;
      if (now() - lastHeard >= heartbeatMs && (pending === undefined || pending.state === 'heartbeat')) {
        await report({ state: 'heartbeat', revision: state.appliedRevision ?? 0 });
      }
    }
    const pace =
      retryFailedAt ??
      (watch.connected ? safetyAt : Math.min(nextPollAt, now() + (watch.msUntilAttempt() ?? Infinity)));
    const until = Math.min(pace, outbox.retryAt, now() + (declarations.msUntilDue() ?? Infinity));
    await sleep(Math.max(0, until - now()), AbortSignal.any([signal, watch.wakeSignal()]));
  }
}

/** The agent version a declaration names (`agent: {version}`), if it names one. */
export function wantedAgent(body: string): string | undefined {
  try {
    const version = (JSON.parse(body) as { agent?: { version?: unknown } }).agent?.version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}

const wantsOtherAgent = (body: string, upgrader: AgentUpgrader | undefined) => {
  const wanted = upgrader ? wantedAgent(body) : undefined;
  return wanted !== undefined && wanted !== upgrader?.version;
};

/** How often the facts are read again: a change is said within a minute of the agent's next wake. */
const factsReadEveryMs = 60_000;

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
