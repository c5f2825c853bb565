import { type ChildProcess, spawn } from 'node:child_process';
import { access, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { agentFolder, readSlots, releasePath, type Slots, writeSlots } from './release-slots.ts';

/** How long a new release has to start, reach the control plane and report before it is rolled back. */
export const defaultTrialBoundMs = 5 * 60 * 1000;

/** Where a release on trial says it reached the control plane (its first report taken). */
export const reachedPath = (dir: string) => join(agentFolder(dir), 'trial-reached');
/** The environment variable naming that file to the agent on trial. */
export const trialReachedEnv = 'MESH_HOST_TRIAL_REACHED';
/** Set on every agent the supervisor runs: only a supervised agent installs a release (agent/agent-upgrade.ts). */
export const supervisedEnv = 'MESH_HOST_SUPERVISED';

export type SupervisorOptions = {
  readonly dir: string;
  /** What the agent runs with: `run --dir … --apply …`. */
  readonly args: readonly string[];
  /** The executable installed by hand (the package's, this very one): run while no release is current. */
  readonly installed: string;
  /** What the installed executable is run with before `args`: the script, when it is Node running the tree. */
  readonly installedArgs?: readonly string[];
  readonly trialBoundMs?: number;
  readonly say: (line: string) => void;
  readonly signal: AbortSignal;
  readonly now?: () => Date;
  /** How often the supervisor looks for the trial's report. @default 1000 */
  readonly pollMs?: number;
};

/**
 * The small supervisor that keeps a host with a working agent: it runs the current release (or
 * the installed executable), and a release on trial (release-slots.ts) in its place. The trial is
 * kept once it has reported to the control plane; if it exits first, or the bound passes, it is
 * stopped and the one before runs again, with the outcome in the host's facts. When the agent it
 * runs ends on its own (stopped, decommissioned, a new release installed), the supervisor ends
 * with its exit code, or starts the trial just installed.
 */
export async function superviseAgent(options: SupervisorOptions): Promise<number> {
  const now = options.now ?? (() => new Date());
  const bound = options.trialBoundMs ?? defaultTrialBoundMs;
  const pollMs = options.pollMs ?? 1000;
  for (;;) {
    if (options.signal.aborted) return 0;
    const slots = await readSlots(options.dir);
    if (slots.trial) {
      const kept = await runTrial(options, slots, bound, pollMs, now);
      if (kept === 'aborted') return 0;
      if (typeof kept === 'object') return kept.exit;
      continue;
    }
    const child = slots.current
      ? start(releasePath(options.dir, slots.current), options.args, {})
      : start(options.installed, [...(options.installedArgs ?? []), ...options.args], {});
    const code = await exited(child, options.signal);
    // An agent that installed a release exits for it to be tried: start the trial.
    if ((await readSlots(options.dir)).trial && !options.signal.aborted) continue;
    return code;
  }
}

async function runTrial(
  options: SupervisorOptions,
  slots: Slots,
  bound: number,
  pollMs: number,
  now: () => Date,
): Promise<'kept' | 'rolled-back' | 'aborted' | { readonly exit: number }> {
  const trial = slots.trial as NonNullable<Slots['trial']>;
  const { dir } = options;
  await rm(reachedPath(dir), { force: true });
  const executable = releasePath(dir, trial.version);
  options.say(`trying release ${trial.version}: kept once it reports within ${Math.round(bound / 1000)} s`);
  const child = start(executable, options.args, { [trialReachedEnv]: reachedPath(dir) });
  const ended = exited(child, options.signal);
  let exitCode: number | undefined;
  void ended.then((code) => {
    exitCode = code;
  });
  const deadline = Date.now() + bound;
  for (;;) {
    if (options.signal.aborted) {
      await ended;
      return 'aborted';
    }
    if (await reached(dir)) {
      await writeSlots(dir, {
        current: trial.version,
        ...(slots.current ? { previous: slots.current } : {}),
        outcome: { version: trial.version, outcome: 'upgraded', at: now().toISOString() },
      });
      options.say(`release ${trial.version} reported: kept`);
      // It goes on running; when it ends, the supervisor ends as it does.
      const code = await ended;
      if ((await readSlots(dir)).trial || options.signal.aborted) return 'kept';
      return { exit: code };
    }
    const why =
      exitCode !== undefined
        ? `it exited ${exitCode} before it reported`
        : Date.now() >= deadline
          ? `it did not report within ${Math.round(bound / 1000)} s`
          : undefined;
    if (why) {
      child.kill('SIGTERM');
      await ended;
      await writeSlots(dir, {
        ...(slots.current ? { current: slots.current } : {}),
        ...(slots.previous ? { previous: slots.previous } : {}),
        outcome: { version: trial.version, outcome: 'rolled-back', reason: why, at: now().toISOString() },
      });
      options.say(`release ${trial.version} rolled back: ${why}`);
      return 'rolled-back';
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

function start(executable: string, args: readonly string[], env: Record<string, string>): ChildProcess {
  return spawn(executable, [...args], {
    stdio: 'inherit',
    env: { ...process.env, [supervisedEnv]: '1', ...env },
  });
}

function exited(child: ChildProcess, signal: AbortSignal): Promise<number> {
  const stop = () => child.kill('SIGTERM');
  signal.addEventListener('abort', stop, { once: true });
  return new Promise((resolve) => {
    child.once('error', () => resolve(127));
    child.once('exit', (code, killed) => {
      signal.removeEventListener('abort', stop);
      resolve(code ?? (killed ? 143 : 1));
    });
  });
}

async function reached(dir: string): Promise<boolean> {
  return access(reachedPath(dir)).then(
    () => true,
    () => false,
  );
}
