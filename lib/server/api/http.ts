import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import type * as z from 'zod';
import { BodyTooLargeError, InvalidRequestError, MalformedJsonError } from '../core/request-errors.ts';

/** Larger bodies are refused before parsing; no Mesh request needs more. */
export const maxBodyBytes = 64 * 1024;

export function json(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyResult {
  return {
    statusCode: status,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

/** API Gateway answers 504 itself when an integration has not answered this long after the request came. */
export const gatewayTimeoutMs = 29_000;

/** Kept back from any wait for the answer itself (middy's timeoutEarlyInMillis): a read, the response. */
export const answerEarlyMs = 1_000;

/**
 * How long a handler may still wait before it must answer: the invocation's remaining time, or
 * API Gateway's 29 s from when the request came, whichever ends first, less what answering
 * takes. No context, no wait.
 */
export function timeToAnswer(
  event: APIGatewayProxyEvent,
  context: Pick<Context, 'getRemainingTimeInMillis'> | undefined,
  now = Date.now(),
): number {
  const remaining = context?.getRemainingTimeInMillis?.() ?? 0;
  const received = event.requestContext?.requestTimeEpoch;
  const gatewayLeft = typeof received === 'number' ? received + gatewayTimeoutMs - now : remaining;
  return Math.max(0, Math.min(remaining, gatewayLeft) - answerEarlyMs);
}

/** Parses and validates a JSON body; every failure is a 4xx that says what is wrong. */
export function parseBody<Schema extends z.ZodType>(
  event: APIGatewayProxyEvent,
  schema: Schema,
  limit = maxBodyBytes,
): z.infer<Schema> {
  const raw = event.isBase64Encoded
    ? Buffer.from(event.body ?? '', 'base64').toString('utf8')
    : (event.body ?? '');
  if (Buffer.byteLength(raw) > limit) {
    throw new BodyTooLargeError(limit);
  }
  let value: unknown;
  try {
    value = raw === '' ? {} : JSON.parse(raw);
  } catch {
    throw new MalformedJsonError();
  }
  return validate(schema, value, 'body');
}

export function validate<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
  where: string,
): z.infer<Schema> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.length > 0 ? issue.path.join('.') : where;
      return `${path}: ${issue.message}`;
    });
    throw new InvalidRequestError(`invalid ${where}: ${problems.join('; ')}`, problems);
  }
  return parsed.data;
}

/** Header lookup that does not depend on how a client or API Gateway cased the name. */
export function header(event: Pick<APIGatewayProxyEvent, 'headers'>, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) {
    if (key.toLowerCase() === wanted && value !== undefined) return value;
  }
  return undefined;
}

/** Whether an If-None-Match header names this ETag (weakly compared, `*` matching any). */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag));
}
