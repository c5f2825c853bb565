import type { Applier, ApplyResult, CheckResult, HealthCheck } from './ports.ts';
import { runShell } from './shell-command.ts';

/** The environment the operator's commands are run with: the declaration's path, its revision, the node. */
const commandEnv = (declarationPath: string, revision: number, node: string) => ({
  MESH_DECLARATION: declarationPath,
  MESH_REVISION: String(revision),
  MESH_NODE: node,
});

/**
 * Runs the operator's apply command through the shell with the declaration's path and revision
 * in its environment (MESH_DECLARATION, MESH_REVISION, MESH_NODE). Its output goes to the
 * agent's own, so the operator sees what the hook said; the end of its stderr is kept for the
 * report (redacted by the run loop before it leaves the node).
 */
export class ShellApplier implements Applier {
  private readonly command: string;
  private readonly node: string;
  private readonly write: (chunk: Buffer) => void;

  constructor(
    command: string,
    node: string,
    write: (chunk: Buffer) => void = (chunk) => process.stdout.write(chunk),
  ) {
    this.command = command;
    this.node = node;
    this.write = write;
  }

  async apply(declarationPath: string, revision: number, signal: AbortSignal): Promise<ApplyResult> {
    const run = await runShell(this.command, {
      env: commandEnv(declarationPath, revision, this.node),
      signal,
      keep: 'stderr',
      write: this.write,
    });
    const output = run.output === '' ? {} : { output: run.output };
    if (run.error !== undefined)
      return { ok: false, reason: `could not run the apply command: ${run.error}` };
    if (run.code === 0) return { ok: true, ...output };
    return {
      ok: false,
      reason: run.signal
        ? `the apply command was stopped by ${run.signal}`
        : `the apply command exited ${run.code}`,
      ...output,
    };
  }
}

/**
 * Runs the operator's check command (`--check`) as the apply command is run, with the same
 * environment: healthy when it exits 0 within its time. Its output is not printed (it runs every
 * interval); its end is kept for the report.
 */
export class ShellHealthCheck implements HealthCheck {
  private readonly command: string;
  private readonly node: string;
  private readonly timeoutMs: number;

  constructor(command: string, node: string, timeoutMs: number) {
    this.command = command;
    this.node = node;
    this.timeoutMs = timeoutMs;
  }

  async check(declarationPath: string, revision: number, signal: AbortSignal): Promise<CheckResult> {
    const run = await runShell(this.command, {
      env: commandEnv(declarationPath, revision, this.node),
      signal,
      keep: 'both',
      timeoutMs: this.timeoutMs,
    });
    const healthy = run.code === 0 && !run.timedOut;
    const reason =
      run.error !== undefined
        ? `could not run the check: ${run.error}`
        : run.timedOut
          ? `the check ran past ${this.timeoutMs / 1000} s and was stopped`
          : run.signal
            ? `the check was stopped by ${run.signal}`
            : `the check exited ${run.code}`;
    return { healthy, reason: healthy ? 'the check exited 0' : reason, output: run.output };
  }
}
