import { type ChildProcess, spawn } from 'node:child_process';

/** A real child process whose whole output is kept, so a failing test can show it. */
export type Watched = {
  readonly child: ChildProcess;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

export function watch(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Watched {
  const child = spawn(command, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: 'pipe' });
  let output = '';
  const listeners = new Set<() => void>();
  const append = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    exited: () => exit,
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(output);
          if (match) {
            cleanup();
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(`timed out after ${timeoutMs} ms waiting for ${pattern}; output so far:\n${output}`),
          );
        }, timeoutMs);
        const onExit = () => {
          check();
          cleanup();
          reject(new Error(`process exited while waiting for ${pattern}; output:\n${output}`));
        };
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
        };
        listeners.add(check);
        child.once('exit', onExit);
        check();
      });
    },
  };
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The JSON a command printed (from its first `{`), or undefined when it printed none. */
export function printedJson(output: string): unknown {
  try {
    return JSON.parse(output.slice(output.indexOf('{')));
  } catch {
    return undefined;
  }
}

/** Runs the operator CLI from source against API; its stdout apart, and everything it printed. */
export async function runMesh(
  api: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; output: string }> {
  const child = watch(process.execPath, ['bin/mesh.ts', '--api', api, ...args]);
  let stdout = '';
  child.child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const { code } = await child.exited();
  return { code, stdout, output: child.output() };
}
