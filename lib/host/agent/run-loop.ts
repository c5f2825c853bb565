import { ControlPlaneUnavailableError, CredentialRefusedError } from './errors.ts';
import type { AgentState, AgentStateStore, Applier, ControlPlane, HostReport } from './ports.ts';

export type RunLoopOptions = {
  readonly controlPlane: ControlPlane;
  readonly applier: Applier;
  readonly state: AgentStateStore;
  /** How often to ask for the declaration when all is well. */
  readonly intervalMs: number;
  /** How often to say "still here" when nothing changes. @default 180_000 */
  readonly heartbeatMs?: number;
  /** The longest wait between attempts while the control plane is away. @default 60_000 */
  readonly maxBackoffMs?: number;
  readonly log: (line: string) => void;
  readonly signal: AbortSignal;
  readonly now?: () => number;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly random?: () => number;
};

/**
 * The host's loop: fetch the declaration when it changes, apply it, report applying / applied /
 * failed with the revision, say "still here" now and then, and ride out a control plane that is
 * away with backoff and jitter. A report that cannot be sent waits and goes with the next
 * attempt; a newer one replaces it, as the control plane would set the older one aside anyway.
 */
export async function runHostAgent(options: RunLoopOptions): Promise<void> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? abortableSleep;
  const random = options.random ?? Math.random;
  const heartbeatMs = options.heartbeatMs ?? 180_000;
  const maxBackoffMs = options.maxBackoffMs ?? 60_000;
  const { controlPlane, applier, log, signal } = options;

  let state: AgentState = await options.state.load();
  let pending: HostReport | undefined;
  // Starting counts as being heard: the first heartbeat is due one interval after the start.
  let lastHeard = now();
  let failures = 0;
  let waitingFor = '';

  const say = (what: string) => {
    if (what !== waitingFor) log(what);
    waitingFor = what;
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
    } catch (error) {
      if (signal.aborted) return;
      say(
        `report ${waiting.state} of revision ${waiting.revision} is waiting to be sent: ${(error as Error).message}`,
      );
    }
  };

  while (!signal.aborted) {
    try {
      await flushReport();
      const fetched = await controlPlane.fetchDeclaration(state.appliedEtag);
      if (failures > 0)
        log(`control plane is back after ${failures} failed attempt${failures === 1 ? '' : 's'}`);
      failures = 0;
      if (fetched.status === 'not-sent') {
        say('waiting for a first declaration: nothing has been pushed to this node yet');
      } else if (fetched.status === 'unchanged') {
        say(`up to date at revision ${state.appliedRevision ?? '?'}; waiting for a change`);
      } else {
        waitingFor = '';
        const path = await options.state.writeDeclaration(fetched.body);
        log(`applying revision ${fetched.revision}`);
        await report({ state: 'applying', revision: fetched.revision, step: 'apply' });
        const result = await applier.apply(path, fetched.revision, signal);
        if (signal.aborted) break;
        if (result.ok) {
          state = { ...state, appliedEtag: fetched.etag, appliedRevision: fetched.revision };
          await options.state.save(state);
          log(`applied revision ${fetched.revision}`);
          await report({ state: 'applied', revision: fetched.revision, step: 'apply' });
        } else {
          log(`failed to apply revision ${fetched.revision}: ${result.reason}`);
          await report({
            state: 'failed',
            revision: fetched.revision,
            step: `apply: ${result.reason}`.slice(0, 200),
          });
          // Not marked applied, so it is tried again; not at once, so a broken hook does not spin.
          await sleep(Math.min(maxBackoffMs, options.intervalMs * 5), signal);
          continue;
        }
      }
      // A heartbeat never replaces a state report still waiting to be sent: that report says more.
      if (now() - lastHeard >= heartbeatMs && (pending === undefined || pending.state === 'heartbeat')) {
        await report({ state: 'heartbeat', revision: state.appliedRevision ?? 0 });
      }
      await sleep(options.intervalMs, signal);
    } catch (error) {
      if (signal.aborted) break;
      failures += 1;
      const hinted = error instanceof ControlPlaneUnavailableError ? error.retryAfterSeconds : undefined;
      const backoff = Math.min(maxBackoffMs, options.intervalMs * 2 ** Math.min(failures, 10));
      const wait = Math.round((hinted ? hinted * 1000 : backoff) * (0.5 + random() / 2));
      const reason =
        error instanceof CredentialRefusedError
          ? `the control plane refused this node's key (${error.message}); is it enrolled?`
          : error instanceof ControlPlaneUnavailableError
            ? error.message
            : `unexpected: ${(error as Error).message}`;
      say(`waiting ${(wait / 1000).toFixed(1)} s before trying again: ${reason}`);
      waitingFor = '';
      await sleep(wait, signal);
    }
  }
  log('stopped');
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
