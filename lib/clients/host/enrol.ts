import { type SignalChannel, signalChannel } from '../../server/core/signal/channel.ts';
import { ApiClient, ApiUnreachableError } from '../http/api-client.ts';
import { nodeHttpTransport } from '../http/node-http-transport.ts';
import type { HttpTransport } from '../http/transport.ts';
import type { NodeKeys } from './keys.ts';

/** One answer of the control plane to `POST /enrol`, or the fact that none came. */
export type EnrolAttempt =
  | {
      readonly kind: 'answer';
      readonly status: number;
      readonly retryAfter: string | null;
      readonly body: unknown;
    }
  | {
      readonly kind: 'unreachable';
      readonly reason: string;
      /** Nothing answers at that address (connection refused, name not found): asking again will not help. */
      readonly nothingAnswers: boolean;
    };

export type EnrolOutcome =
  | {
      readonly kind: 'enrolled';
      readonly node: string;
      readonly thumbprint: string;
      readonly enrolledAt: string;
      /** Where to wait for the node's signal; undefined when the control plane named no broker. */
      readonly signal: SignalChannel | undefined;
    }
  /** Patience ran out while told "try again" (`reason`: the last code): run enrol again after `waitSeconds`. */
  | {
      readonly kind: 'wait';
      readonly waitSeconds: number;
      readonly attempts: number;
      readonly reason: string;
    }
  | { readonly kind: 'refused'; readonly code: string; readonly message: string; readonly status: number }
  | { readonly kind: 'unreachable'; readonly message: string };

export type EnrolClientDeps = {
  /** Sends the same enrol request again each time (same keys, same body). */
  readonly send: () => Promise<EnrolAttempt>;
  readonly sleep: (ms: number) => Promise<void>;
  readonly now: () => number;
  /** [0, 1), for jitter. */
  readonly random: () => number;
  /** How long to keep asking while told "try again": as long as a claim can last. @default 35 s */
  readonly patienceMs?: number;
  /**
   * How long to keep asking while the answer is 429 (the firewall or a budget): a fleet behind
   * one address is let in a limit's worth at a time. @default 30 minutes
   */
  readonly throttledPatienceMs?: number;
  readonly onRetry?: (waitMs: number, reason: string) => void;
};

/** A claim lasts 30 s on the control plane; a little more covers the clocks and the trip. */
export const defaultPatienceMs = 35_000;
/** Several of the firewall's 5-minute windows: long enough for a fleet behind one NAT address. */
export const defaultThrottledPatienceMs = 30 * 60_000;
const fallbackRetryMs = 2_000;
const maxJitterMs = 1_000;
/** The longest a throttled host waits between two attempts. */
const maxThrottledWaitMs = 10 * 60_000;

/**
 * Presents the enrolment until it is answered for good. "Try again" answers (409 token_held,
 * 429, any 5xx, or no answer after the request may have arrived) are asked again with the very
 * same request, after Retry-After plus jitter, for as long as the patience lasts; then the host
 * is told how long to wait (the last Retry-After) before running enrol again. A connection
 * refused, or a name that does not resolve, means nothing answers there: asking again will not
 * help, so it ends at once.
 *
 * A 429 is waited out longer and apart: the firewall counts every request of an address, the
 * refused ones too, so hosts behind one NAT address that all came back after Retry-After would
 * keep their address over the limit. Each 429 in a row doubles the wait from Retry-After (at
 * most 10 minutes), and the wait is spread over as long again (full jitter), so the fleet's
 * requests fall under the limit and a limit's worth gets in each window; `throttledPatienceMs`
 * bounds the whole.
 */
export async function presentEnrolment(deps: EnrolClientDeps): Promise<EnrolOutcome> {
  const startedAt = deps.now();
  const giveUpAt = startedAt + (deps.patienceMs ?? defaultPatienceMs);
  const throttledGiveUpAt = startedAt + (deps.throttledPatienceMs ?? defaultThrottledPatienceMs);
  let attempts = 0;
  let throttledInARow = 0;
  let lastWaitMs = fallbackRetryMs;
  for (;;) {
    attempts += 1;
    const attempt = await deps.send();
    let reason: string;
    if (attempt.kind === 'unreachable') {
      if (attempt.nothingAnswers) return { kind: 'unreachable', message: attempt.reason };
      reason = attempt.reason;
      lastWaitMs = fallbackRetryMs;
    } else if (attempt.status === 200) {
      const body = attempt.body as { node: string; thumbprint: string; enrolledAt: string; signal?: unknown };
      const signal = signalChannel.safeParse(body.signal);
      return {
        kind: 'enrolled',
        node: body.node,
        thumbprint: body.thumbprint,
        enrolledAt: body.enrolledAt,
        signal: signal.success ? signal.data : undefined,
      };
    } else if (isTryAgain(attempt)) {
      reason = problemOf(attempt.body, attempt.status).code;
      lastWaitMs = retryAfterMs(attempt.retryAfter) ?? fallbackRetryMs;
    } else {
      const problem = problemOf(attempt.body, attempt.status);
      return { kind: 'refused', code: problem.code, message: problem.message, status: attempt.status };
    }
    const throttled = attempt.kind === 'answer' && attempt.status === 429;
    throttledInARow = throttled ? throttledInARow + 1 : 0;
    const waitMs = throttled
      ? throttledWaitMs(lastWaitMs, throttledInARow, deps.random())
      : lastWaitMs + Math.floor(deps.random() * maxJitterMs);
    if (deps.now() + waitMs > (throttled ? throttledGiveUpAt : giveUpAt)) {
      return { kind: 'wait', waitSeconds: Math.max(1, Math.ceil(lastWaitMs / 1000)), attempts, reason };
    }
    deps.onRetry?.(waitMs, reason);
    await deps.sleep(waitMs);
  }
}

/** The `inARow`th 429's wait: Retry-After doubled for each before it, then spread over as long again. */
export function throttledWaitMs(retryAfterMs: number, inARow: number, random: number): number {
  const base = Math.min(maxThrottledWaitMs, Math.max(retryAfterMs, 1_000) * 2 ** Math.min(inARow - 1, 16));
  return Math.round(base * (1 + random));
}

/**
 * "Try again": the token is held (409 token_held), throttled (429), or the control plane failed
 * or is away (any 5xx). A 500 is the control plane's own fault, never a refusal of the token:
 * the same request may well succeed a moment later.
 */
function isTryAgain(attempt: { status: number; body: unknown }): boolean {
  if (attempt.status === 409) return problemOf(attempt.body, attempt.status).code === 'token_held';
  return attempt.status === 429 || attempt.status >= 500;
}

function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  const seconds = Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds, 300) * 1000;
  return undefined;
}

function problemOf(body: unknown, status: number): { code: string; message: string } {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  return {
    code: typeof error?.code === 'string' ? error.code : `http_${status}`,
    message: typeof error?.message === 'string' ? error.message : `the control plane answered ${status}`,
  };
}

/** The request body of `POST /enrol`: public halves only. */
export function enrolRequestBody(node: string, token: string, keys: NodeKeys) {
  return { node, token, keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk } };
}

/** Nobody listens at the address, or the name has no address: a mistyped --api, not a passing fault. */
const nothingAnswers = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN']);

/** How long one enrol attempt waits for its answer before it is asked again. */
const enrolAttemptTimeoutMs = 10_000;

/**
 * One attempt: `POST /enrol`, unsigned (the token is the proof), over node:http(s) as the agent
 * asks; `transport` replaces the wire (a test's fake).
 */
export async function sendEnrolment(
  api: string,
  body: unknown,
  options: { readonly transport?: HttpTransport; readonly timeoutMs?: number } = {},
): Promise<EnrolAttempt> {
  const client = new ApiClient(api, {
    transport: options.transport ?? nodeHttpTransport,
    timeoutMs: options.timeoutMs ?? enrolAttemptTimeoutMs,
  });
  try {
    const answer = await client.send('POST', '/enrol', body);
    return {
      kind: 'answer',
      status: answer.status,
      retryAfter: answer.headers.get('retry-after'),
      body: answer.body,
    };
  } catch (error) {
    if (!(error instanceof ApiUnreachableError)) throw error;
    return { kind: 'unreachable', reason: error.reason, nothingAnswers: nothingAnswers.has(error.reason) };
  }
}
