import { spawn } from 'node:child_process';

/** How much of a command's output is kept in memory: its end, enough for any tail a report carries. */
export const keptOutputChars = 16 * 1024;

/** How long after the shell exits its output is still read, when something it started holds the pipes. */
const outputGraceMs = 200;

export type ShellRun = {
  /** The exit code; null when it was stopped by a signal or never ran. */
  readonly code: number | null;
  /** The signal that stopped it, when one did. */
  readonly signal: string | null;
  /** Why it could not be run at all (the shell missing, say). */
  readonly error?: string;
  /** It ran past its time and was stopped. */
  readonly timedOut: boolean;
  /** The end of what it wrote on the streams asked for, as it wrote it. */
  readonly output: string;
};

export type ShellOptions = {
  readonly env: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
  /** Stop it after this long (SIGTERM, then SIGKILL 2 s later). */
  readonly timeoutMs?: number;
  /** Which of its streams `output` keeps. */
  readonly keep: 'stderr' | 'both';
  /** Where each chunk of its output goes as it comes (the agent's own output); nowhere when absent. */
  readonly write?: (chunk: Buffer) => void;
};

/**
 * Runs a command through `/bin/sh -c` in a process group of its own, so stopping it (the agent
 * stopping, its time running out) stops whatever it started too. Keeps the end of its output.
 */
export function runShell(command: string, options: ShellOptions): Promise<ShellRun> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], {
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let kept = '';
    let timedOut = false;
    const keep = (chunk: Buffer) => {
      kept += chunk.toString('utf8');
      // Cut now and then, not on every chunk: the end is what counts.
      if (kept.length > keptOutputChars * 2) kept = kept.slice(-keptOutputChars);
    };
    child.stdout.on('data', (chunk: Buffer) => {
      options.write?.(chunk);
      if (options.keep === 'both') keep(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      options.write?.(chunk);
      keep(chunk);
    });
    const kill = (signal: NodeJS.Signals) => {
      try {
        if (child.pid) process.kill(-child.pid, signal);
      } catch {
        child.kill(signal);
      }
    };
    let killer: NodeJS.Timeout | undefined;
    const stop = () => {
      kill('SIGTERM');
      killer ??= setTimeout(() => kill('SIGKILL'), 2_000);
    };
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            stop();
          }, options.timeoutMs);
    options.signal.addEventListener('abort', stop, { once: true });
    const settle = (run: Omit<ShellRun, 'output' | 'timedOut'>) => {
      clearTimeout(timer);
      clearTimeout(killer);
      options.signal.removeEventListener('abort', stop);
      resolve({ ...run, timedOut, output: kept.slice(-keptOutputChars) });
    };
    let settled = false;
    const once = (run: Omit<ShellRun, 'output' | 'timedOut'>) => {
      if (settled) return;
      settled = true;
      settle(run);
    };
    child.once('error', (error) => once({ code: null, signal: null, error: error.message }));
    // Its end is when the shell exits: what it started in the background may hold the pipes open
    // for good. The output still in the pipes is read for a moment first.
    child.once('exit', (code, signal) => {
      const ended = { code, signal };
      const late = setTimeout(() => once(ended), outputGraceMs);
      child.once('close', () => {
        clearTimeout(late);
        once(ended);
      });
    });
  });
}
