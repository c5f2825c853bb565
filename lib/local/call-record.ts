import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The AWS calls the code makes, each recorded as one JSON line with the function (a row of
 * lib/server/functions/table.ts) that made it, when MESH_CALL_RECORD names a folder: the rehearsal judges
 * them against the synthesized template's policies for that function (docs/rehearsal.md). Off
 * by default, and then nothing is wrapped or written.
 */
const folder = process.env.MESH_CALL_RECORD || undefined;
const file = folder ? join(folder, `${process.pid}-${randomUUID()}.jsonl`) : undefined;
const running = new AsyncLocalStorage<string>();
if (folder) mkdirSync(folder, { recursive: true });

/** One call as recorded: an SDK request (its X-Amz-Target and body), or what a local stand-in did in AWS's place. */
export type RecordedCall =
  | { readonly fn: string; readonly target: string; readonly body: string }
  | { readonly fn: string; readonly stand: 'states:StartSyncExecution' | 'lambda:InvokeFunction' }
  /** A start of a stepping flow (lib/server/flows/stepping-flows.ts), named by its construct's id. */
  | { readonly fn: string; readonly stand: 'states:StartExecution'; readonly flow: string }
  | { readonly fn: string; readonly stand: 'iot:Publish'; readonly topic: string; readonly retain: boolean }
  | {
      readonly broker: 'iot:Connect' | 'iot:Subscribe' | 'iot:Receive' | 'iot:Publish';
      readonly resource: string;
      readonly allowed: boolean;
      readonly policies: unknown;
    };

/** Runs `work` as the function `name`, so the calls it makes are recorded as that function's. */
export function asFunction<T>(name: string, work: () => T): T {
  return file ? running.run(name, work) : work();
}

/** Writes a call made as a function (asFunction), or a broker decision; nothing when recording is off. */
export function recordCall(call: RecordedCall | Omit<Extract<RecordedCall, { fn: string }>, 'fn'>): void {
  if (!file) return;
  const fn = running.getStore();
  if (!('broker' in call) && fn === undefined) return;
  appendFileSync(file, `${JSON.stringify({ ...call, ...(fn === undefined ? {} : { fn }) })}\n`);
}

type Middleware = (
  next: (args: { request: unknown }) => Promise<unknown>,
) => (args: { request: unknown }) => Promise<unknown>;

/** Adds the recording to an SDK client (when recording is on): each request as sent, long values cut. */
export function recordingCalls<C>(client: C): C {
  if (!file) return client;
  const stack = (client as { middlewareStack: { add(m: Middleware, o: object): void } }).middlewareStack;
  stack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string>; body?: unknown };
      const target = request.headers?.['x-amz-target'];
      const bytes = request.body instanceof Uint8Array ? request.body : undefined;
      const body = bytes
        ? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString()
        : request.body;
      if (target && typeof body === 'string')
        recordCall({ target, body: JSON.stringify(shortened(JSON.parse(body || '{}'))) });
      return next(args);
    },
    { step: 'build', name: 'meshCallRecord' },
  );
  return client;
}

/** Keys and names are short; item values and message bodies need not be kept whole to judge a call. */
function shortened(value: unknown): unknown {
  if (typeof value === 'string') return value.length > 200 ? value.slice(0, 200) : value;
  if (Array.isArray(value)) return value.map(shortened);
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, shortened(item)]));
  return value;
}
