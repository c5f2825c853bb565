import type { FunctionSpec } from '../server/functions/spec.ts';
import { functionSpecs } from '../server/functions/table.ts';

/**
 * AWS's documented quotas the local runtime holds every path to (docs/local-and-aws.md, "AWS's
 * quotas, enforced here"), each with the error AWS answers when it is passed. Step Functions
 * and Lambda are stood in for in this process, so their quotas are checked here; DynamoDB's and
 * SQS's are checked on every SDK request (lib/local/sdk-quotas.ts) where the emulators do not
 * check them themselves.
 */
export const awsQuotas = {
  /** Step Functions: a state's or a task's input or output, UTF-8 JSON. */
  stateBytes: 262_144,
  /** Step Functions Express: an execution's duration. */
  expressMs: 5 * 60_000,
  /** Step Functions Standard: an execution's history. */
  historyEvents: 25_000,
  /** Lambda: a synchronous invocation's request or response payload (6 MB). */
  syncPayloadBytes: 6_291_456,
  /** Lambda: an asynchronous invocation's (InvocationType Event) request payload (256 KB). */
  asyncPayloadBytes: 262_144,
  /** Lambda: a function's timeout when its row names none (docs/deploy.md). */
  defaultTimeoutSeconds: 10,
  /** API Gateway (REST): a request's payload (10 MB). */
  apiPayloadBytes: 10_485_760,
  /** API Gateway (REST): the integration's timeout. */
  apiIntegrationMs: 29_000,
  /** SQS: one message, body and attributes, and a batch's total (the queue's MaximumMessageSize). */
  sqsMessageBytes: 262_144,
  /** SQS FIFO without high throughput: API calls a second, for each action on a queue. */
  fifoCallsPerSecond: 300,
  /** DynamoDB: writes and reads a second on one partition (the opt-in model, MESH_PARTITION_THROUGHPUT). */
  partitionWritesPerSecond: 1_000,
  partitionReadsPerSecond: 3_000,
} as const;

/**
 * An error as AWS names it where the local runtime stands in for the service (Step Functions,
 * Lambda, API Gateway): its `name` is AWS's error code (`States.DataLimitExceeded`,
 * `Sandbox.Timedout`, `Lambda.TooManyRequestsException`…), which is what a flow's Retry and
 * Catch match and what PushFlowFailedError carries on.
 */
export class AwsQuotaError extends Error {
  override readonly name: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = code;
  }
}

/** A state's or a task's data over 256 KiB, as Step Functions fails the execution. */
export function dataLimitExceeded(state: string, what: 'input' | 'result', bytes: number): AwsQuotaError {
  return new AwsQuotaError(
    'States.DataLimitExceeded',
    what === 'result'
      ? `The state/task '${state}' returned a result with a size exceeding the maximum number of bytes service limit. (${bytes} bytes, limit ${awsQuotas.stateBytes})`
      : `The state/task '${state}' has an input with a size exceeding the maximum number of bytes service limit. (${bytes} bytes, limit ${awsQuotas.stateBytes})`,
  );
}

/** A function that ran past its timeout, as Lambda reports it to Step Functions and its event sources. */
export function sandboxTimedOut(fn: string, seconds: number): AwsQuotaError {
  return new AwsQuotaError(
    'Sandbox.Timedout',
    `RequestId: local Error: Task timed out after ${seconds.toFixed(2)} seconds (${fn})`,
  );
}

/** An invocation refused for the function's reserved concurrency, as Step Functions names Lambda's 429. */
export function tooManyRequests(fn: string, reserved: number): AwsQuotaError {
  return new AwsQuotaError(
    'Lambda.TooManyRequestsException',
    `Rate Exceeded. (Service: Lambda, Status Code: 429; Reason: ReservedFunctionConcurrentInvocationLimitExceeded; ${fn} has ${reserved} reserved)`,
  );
}

/** A payload over Lambda's limit for its invocation type. */
export function payloadTooLarge(
  fn: string,
  kind: 'request' | 'response',
  bytes: number,
  limit: number,
): AwsQuotaError {
  return kind === 'request'
    ? new AwsQuotaError(
        'Lambda.RequestTooLargeException',
        `${fn}: Request must be smaller than ${limit} bytes for the InvokeFunction operation (${bytes} bytes)`,
      )
    : new AwsQuotaError(
        'Lambda.ResponseSizeTooLarge',
        `${fn}: Response payload size exceeded maximum allowed payload size (${limit} bytes). (${bytes} bytes)`,
      );
}

/** Each function's timeout and reserved concurrency, from its row (lib/server/functions/*.ts). */
export function functionLimits(fn: string): FunctionLimits {
  return limitsOf((functionSpecs as readonly FunctionSpec[]).find((row) => row.name === fn));
}

type FunctionLimits = { readonly timeoutSeconds: number; readonly reserved?: number };

function limitsOf(
  spec: Pick<FunctionSpec, 'timeoutSeconds' | 'reservedConcurrency'> | undefined,
): FunctionLimits {
  return {
    timeoutSeconds: spec?.timeoutSeconds ?? awsQuotas.defaultTimeoutSeconds,
    ...(spec?.reservedConcurrency !== undefined ? { reserved: spec.reservedConcurrency } : {}),
  };
}

const running = new Map<string, number>();

export type InvocationOptions = {
  /** The payload it is invoked with, checked against the invocation type's limit. */
  readonly payload?: unknown;
  /** `event`: InvocationType Event (256 KB); else synchronous (6 MB, the response checked too). */
  readonly type?: 'sync' | 'event';
  /** The function's timeout instead of its row's (a caller that waits less, as API Gateway's 29 s). */
  readonly timeoutSeconds?: number;
  /** The row to read the limits from, when the caller serves rows of its own (tests' tables). */
  readonly spec?: Pick<FunctionSpec, 'timeoutSeconds' | 'reservedConcurrency'>;
};

/**
 * Runs one invocation of the function `fn` as Lambda would hold it: refused when its reserved
 * concurrency is in use, its payloads checked, and failed with `Sandbox.Timedout` when it runs
 * past its row's timeout. Lambda stops the sandbox then; here the work goes on unobserved, and
 * what it writes after that is what a sandbox frozen mid-call can leave on AWS too.
 */
export async function invocation<T>(
  fn: string,
  work: () => Promise<T>,
  options: InvocationOptions = {},
): Promise<T> {
  const limits = options.spec ? limitsOf(options.spec) : functionLimits(fn);
  if (options.payload !== undefined) {
    const limit = options.type === 'event' ? awsQuotas.asyncPayloadBytes : awsQuotas.syncPayloadBytes;
    const bytes = jsonBytes(options.payload);
    if (bytes > limit) throw payloadTooLarge(fn, 'request', bytes, limit);
  }
  const now = running.get(fn) ?? 0;
  if (limits.reserved !== undefined && now >= limits.reserved) throw tooManyRequests(fn, limits.reserved);
  running.set(fn, now + 1);
  const seconds = options.timeoutSeconds ?? limits.timeoutSeconds;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(sandboxTimedOut(fn, seconds)), seconds * 1000);
    timer.unref();
  });
  const done = work();
  try {
    const result = await Promise.race([done, timedOut]);
    if (options.type !== 'event' && result !== undefined) {
      const bytes = jsonBytes(result);
      if (bytes > awsQuotas.syncPayloadBytes)
        throw payloadTooLarge(fn, 'response', bytes, awsQuotas.syncPayloadBytes);
    }
    return result;
  } finally {
    clearTimeout(timer);
    // the concurrency is held until the work ends, as a sandbox is, even past a timeout's answer
    done.then(
      () => release(fn),
      () => release(fn),
    );
  }
}

function release(fn: string): void {
  const left = (running.get(fn) ?? 1) - 1;
  if (left > 0) running.set(fn, left);
  else running.delete(fn);
}

/** The bytes of a value as UTF-8 JSON, as AWS measures a payload or a state. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}
