import { type ChildProcess, spawn } from 'node:child_process';
import type { CodedLine } from '../../lib/server/core/coded-lines.ts';
import { tokenPattern } from '../../lib/server/core/enrolment/token.ts';

/** A coded line a process printed as JSON (lib/server/core/coded-lines.ts, or Powertools' with a `code`): all its keys. */
export type Heard = { readonly code: string; readonly message?: string } & Readonly<Record<string, unknown>>;

/** A heard line of a known code: its typed fields, and whatever else it carries (a message id, say). */
export type FieldsHeard<Fields> = Omit<Fields, 'code' | 'level' | 'message'> & Heard;

/** A real child process whose whole output is kept, so a failing test can show it. */
export type Watched = {
  readonly child: ChildProcess;
  output(): string;
  /** Every coded line it printed so far, in order (MESH_LOG_FORMAT=json, `--json`, Powertools' logs). */
  heard(): readonly Heard[];
  /**
   * Resolves with the fields of the first line of `line`'s code (that `where` takes, if given);
   * rejects when the process exits first or `timeoutMs` passes.
   */
  waitForCode<Fields extends object>(
    line: CodedLine<Fields> | { readonly code: string },
    options?: { readonly timeoutMs?: number; readonly where?: (fields: FieldsHeard<Fields>) => boolean },
  ): Promise<FieldsHeard<Fields>>;
  /** Prose a process prints without codes (the rehearsal's `--serve`): matched on the whole output. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

/** A token's shape anywhere in a text, not only as the whole of it. */
const tokenShape = new RegExp(tokenPattern.source.replace(/^\^/, '').replace(/\$$/, ''), 'g');

/**
 * Why ARGS put an enrolment token on a command line, where every user of the machine reads it
 * (`ps`, /proc/PID/cmdline), or undefined when they do not: `--token VALUE`, `--token=VALUE`, or
 * a token's shape in any word. The answer names the place, never the token.
 */
export function tokenOnCommandLine(args: readonly string[]): string | undefined {
  for (const [index, word] of args.entries()) {
    if (word === '--token' && index + 1 < args.length) return `--token and a value at argument ${index}`;
    if (word.startsWith('--token=')) return `--token=… at argument ${index}`;
    if (new RegExp(tokenShape.source).test(word)) return `a token at argument ${index}`;
  }
  return undefined;
}

/** TEXT with every token's secret blanked, for output kept to be shown. */
export function withTokensBlanked(text: string): string {
  return text.replace(tokenShape, (token) => `${token.slice(0, 'mesh_'.length + 12)}_<secret blanked>`);
}

/** Whether TEXT holds a token's shape. */
export function holdsToken(text: string): boolean {
  return new RegExp(tokenShape.source).test(text);
}

export type WatchOptions = {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /**
   * Only for a test whose point is what a program does with a token on its command line
   * (test/integration/enrol-token-off-command-lines.test.ts); every other spawn is refused one.
   */
  tokenOnCommandLine?: 'on purpose';
};

/** A process is refused a token on its command line (`tokenOnCommandLine`), unless on purpose. */
export function watch(command: string, args: string[], options: WatchOptions = {}): Watched {
  const why = tokenOnCommandLine([command, ...args]);
  if (why !== undefined && options.tokenOnCommandLine !== 'on purpose')
    throw new Error(
      `refused to start ${command}: ${why} puts a token on its command line, where every user of the machine can read it; use --token-file or MESH_TOKEN`,
    );
  const child = spawn(command, args, { env: options.env ?? process.env, cwd: options.cwd, stdio: 'pipe' });
  let output = '';
  const heard: Heard[] = [];
  const listeners = new Set<() => void>();
  // Each stream is cut into lines of its own, so a line split across chunks is read whole.
  const reader = () => {
    const read = codedLineReader((said) => heard.push(said));
    return (chunk: Buffer) => {
      const text = chunk.toString();
      output += text;
      read(text);
      for (const listener of listeners) listener();
    };
  };
  child.stdout?.on('data', reader());
  child.stderr?.on('data', reader());
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => output,
    heard: () => heard,
    exited: () => exit,
    waitForCode<Fields extends object>(
      line: CodedLine<Fields> | { readonly code: string },
      options: {
        readonly timeoutMs?: number;
        readonly where?: (fields: FieldsHeard<Fields>) => boolean;
      } = {},
    ) {
      const find = () =>
        heard.find(
          (said): said is FieldsHeard<Fields> =>
            said.code === line.code && (options.where?.(said as FieldsHeard<Fields>) ?? true),
        );
      return waitUntil(find, `the code ${line.code}`, options.timeoutMs);
    },
    waitFor(pattern, timeoutMs) {
      return waitUntil(() => pattern.exec(output) ?? undefined, String(pattern), timeoutMs);
    },
  };

  function waitUntil<T>(find: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = find();
        if (found !== undefined) {
          cleanup();
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; output so far:\n${output}`));
      }, timeoutMs);
      const onExit = () => {
        check();
        cleanup();
        reject(new Error(`process exited while waiting for ${what}; output:\n${output}`));
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
  }
}

/** The coded lines in a finished process's output. */
export function codedLinesIn(output: string): Heard[] {
  const heard: Heard[] = [];
  codedLineReader((said) => heard.push(said))(`${output}\n`);
  return heard;
}

/** Cuts one stream's text into lines and hands each coded one (a JSON object with a code) to `heard`. */
export function codedLineReader(heard: (said: Heard) => void): (text: string) => void {
  let partial = '';
  return (text) => {
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const said = codedIn(line);
      if (said) heard(said);
    }
  };
}

/** The line as a coded line, when it is one JSON object with a code. */
function codedIn(line: string): Heard | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value = JSON.parse(line) as unknown;
    return typeof value === 'object' && value !== null && typeof (value as Heard).code === 'string'
      ? (value as Heard)
      : undefined;
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The JSON document a command printed under --json (its result, indented, so its first and last
 * lines are `{` and `}` alone), or undefined when it printed none; the coded lines on its
 * stderr, one object a line, are not it.
 */
export function printedJson(output: string): unknown {
  return printedJsonDocuments(output)[0];
}

/**
 * Every JSON document a command printed on stdout, in order (one with `--json`; `mesh apply
 * --push` prints the apply's, then the push's): each starts with a line `{` and ends with the
 * next line `}` (or is the line `{}`); stderr's JSON lines never do.
 */
export function printedJsonDocuments(output: string): unknown[] {
  const lines = output.split('\n');
  const documents: unknown[] = [];
  for (let start = 0; start < lines.length; start += 1) {
    if (lines[start] !== '{' && lines[start] !== '{}') continue;
    const end = lines[start] === '{}' ? start : lines.indexOf('}', start);
    if (end < 0) break;
    try {
      documents.push(JSON.parse(lines.slice(start, end + 1).join('\n')));
    } catch {
      // not a document after all: a line of something else
    }
    start = end;
  }
  return documents;
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
