import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import type * as z from 'zod';
import { Problem } from './problem.ts';

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

/** Parses and validates a JSON body; every failure is a 4xx that says what is wrong. */
export function parseBody<Schema extends z.ZodType>(
  event: APIGatewayProxyEvent,
  schema: Schema,
): z.infer<Schema> {
  const raw = event.isBase64Encoded
    ? Buffer.from(event.body ?? '', 'base64').toString('utf8')
    : (event.body ?? '');
  if (Buffer.byteLength(raw) > maxBodyBytes) {
    throw new Problem(413, 'body_too_large', `the request body is larger than ${maxBodyBytes} bytes`);
  }
  let value: unknown;
  try {
    value = raw === '' ? {} : JSON.parse(raw);
  } catch {
    throw new Problem(400, 'malformed_json', 'the request body is not valid JSON');
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
    throw new Problem(400, 'invalid_request', `invalid ${where}: ${problems.join('; ')}`, {
      details: problems,
    });
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
