import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { LambdaError, SandboxMessage, SandboxRequest } from './lambda-sandbox.ts';

const sandboxEntry = fileURLToPath(new URL('./lambda-sandbox.ts', import.meta.url));

/** Lambda's own bounds that the rehearsal holds a function to. */
const initLimitMs = 10_000;
const responseLimitBytes = 6 * 1024 * 1024;

/** An invocation that failed: the function's own error, or Lambda's (timeout, init failure, response too large). */
export class LambdaInvocationError extends Error {
  override name = 'LambdaInvocationError';
  readonly errorType: string;
  readonly errorMessage: string;
  readonly trace: readonly string[];
  constructor(error: LambdaError) {
    super(`${error.errorType}: ${error.errorMessage}`);
    this.errorType = error.errorType;
    this.errorMessage = error.errorMessage;
    this.trace = error.trace ?? [];
  }
}

export type SandboxPoolOptions = {
  /** The sandbox process's whole environment: the template's variables and Lambda's own. */
  readonly environment: Readonly<Record<string, string>>;
  readonly timeoutSeconds: number;
  /** How many execution environments may run at once; more invocations wait for one. */
  readonly maxInstances: number;
  readonly onLog: (line: string) => void;
  /** A fresh execution environment is being made (a cold start). */
  readonly onColdStart?: () => void;
};

type Sandbox = { readonly child: ChildProcess; busy: boolean; gone: boolean };

/**
 * The execution environments of one function: each a fresh Node process running one
 * invocation at a time, made on demand up to `maxInstances` and kept warm, as Lambda does.
 */
export class SandboxPool {
  readonly #options: SandboxPoolOptions;
  readonly #sandboxes = new Set<Sandbox>();
  readonly #waiting: Array<() => void> = [];
  #starting = 0;
  #stopped = false;

  constructor(options: SandboxPoolOptions) {
    this.#options = options;
  }

  async invoke(event: unknown): Promise<unknown> {
    const sandbox = await this.#acquire();
    try {
      return await this.#run(sandbox, event);
    } finally {
      sandbox.busy = false;
      this.#waiting.shift()?.();
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all([...this.#sandboxes].map((sandbox) => this.#discard(sandbox)));
  }

  async #acquire(): Promise<Sandbox> {
    for (;;) {
      if (this.#stopped)
        throw new LambdaInvocationError({
          errorType: 'Rehearsal.Stopped',
          errorMessage: 'the rehearsal is stopping',
        });
      const idle = [...this.#sandboxes].find((sandbox) => !sandbox.busy && !sandbox.gone);
      if (idle) {
        idle.busy = true;
        return idle;
      }
      if (this.#sandboxes.size + this.#starting < this.#options.maxInstances) {
        this.#starting += 1;
        try {
          const sandbox = await this.#start();
          sandbox.busy = true;
          this.#sandboxes.add(sandbox);
          return sandbox;
        } finally {
          this.#starting -= 1;
        }
      }
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
  }

  async #start(): Promise<Sandbox> {
    this.#options.onColdStart?.();
    const child = fork(sandboxEntry, [], {
      env: { ...this.#options.environment },
      execArgv: [],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json',
    });
    const sandbox: Sandbox = { child, busy: false, gone: false };
    for (const stream of [child.stdout, child.stderr]) {
      let pending = '';
      stream?.on('data', (chunk: Buffer) => {
        const lines = (pending + chunk.toString()).split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) this.#options.onLog(line);
      });
      stream?.on('end', () => pending && this.#options.onLog(pending));
    }
    child.once('exit', () => {
      sandbox.gone = true;
      this.#sandboxes.delete(sandbox);
      this.#waiting.shift()?.();
    });
    const outcome = await new Promise<SandboxMessage | { type: 'exit'; code: number | null }>((resolve) => {
      const timer = setTimeout(
        () =>
          resolve({
            type: 'init-error',
            errorType: 'Runtime.InitTimeout',
            errorMessage: `init took longer than ${initLimitMs / 1000} s`,
          }),
        initLimitMs,
      );
      child.once('message', (message: SandboxMessage) => {
        clearTimeout(timer);
        resolve(message);
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ type: 'exit', code });
      });
    });
    if (outcome.type === 'ready') return sandbox;
    await this.#discard(sandbox);
    if (outcome.type === 'init-error') throw new LambdaInvocationError(outcome);
    throw new LambdaInvocationError({
      errorType: 'Runtime.ExitError',
      errorMessage: `the runtime exited during init (code ${outcome.type === 'exit' ? outcome.code : '?'})`,
    });
  }

  #run(sandbox: Sandbox, event: unknown): Promise<unknown> {
    const timeoutMs = this.#options.timeoutSeconds * 1000;
    const request: SandboxRequest = {
      type: 'invoke',
      id: randomUUID(),
      event,
      requestId: randomUUID(),
      deadlineMs: Date.now() + timeoutMs,
    };
    return new Promise((resolve, reject) => {
      const finish = (outcome: () => void) => {
        clearTimeout(timer);
        sandbox.child.off('message', onMessage);
        sandbox.child.off('exit', onExit);
        outcome();
      };
      const fail = (error: LambdaError) => finish(() => reject(new LambdaInvocationError(error)));
      const timer = setTimeout(() => {
        void this.#discard(sandbox);
        fail({
          errorType: 'Sandbox.Timedout',
          errorMessage: `Task timed out after ${this.#options.timeoutSeconds.toFixed(2)} seconds`,
        });
      }, timeoutMs);
      const onMessage = (message: SandboxMessage) => {
        if (message.type === 'result' && message.id === request.id) {
          const size = Buffer.byteLength(JSON.stringify(message.payload));
          if (size > responseLimitBytes)
            fail({
              errorType: 'Function.ResponseSizeTooLarge',
              errorMessage: `Response payload size (${size} bytes) exceeded maximum allowed payload size (${responseLimitBytes} bytes).`,
            });
          else finish(() => resolve(message.payload));
        } else if (message.type === 'error' && message.id === request.id) fail(message);
      };
      const onExit = (code: number | null) =>
        fail({
          errorType: 'Runtime.ExitError',
          errorMessage: `RequestId: ${request.requestId} Error: Runtime exited with error: exit status ${code}`,
        });
      sandbox.child.on('message', onMessage);
      sandbox.child.once('exit', onExit);
      sandbox.child.send(request);
    });
  }

  async #discard(sandbox: Sandbox): Promise<void> {
    sandbox.gone = true;
    this.#sandboxes.delete(sandbox);
    const { child } = sandbox;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}
