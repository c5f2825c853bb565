import type { GatewayResponseModel } from './api-model.ts';

/** API Gateway's own status for each of its response types. */
export const gatewayResponseStatus: Readonly<Record<string, number>> = {
  ACCESS_DENIED: 403,
  API_CONFIGURATION_ERROR: 500,
  AUTHORIZER_CONFIGURATION_ERROR: 500,
  AUTHORIZER_FAILURE: 500,
  BAD_REQUEST_PARAMETERS: 400,
  BAD_REQUEST_BODY: 400,
  EXPIRED_TOKEN: 403,
  INTEGRATION_FAILURE: 504,
  INTEGRATION_TIMEOUT: 504,
  INVALID_SIGNATURE: 403,
  MISSING_AUTHENTICATION_TOKEN: 403,
  REQUEST_TOO_LARGE: 413,
  RESOURCE_NOT_FOUND: 404,
  THROTTLED: 429,
  UNAUTHORIZED: 401,
  UNSUPPORTED_MEDIA_TYPE: 415,
};

/** VTL references a gateway response template may hold: `$context.x`, `${context.x}`, `$!context.x`. */
const referencePattern = /\$!?(?:\{([\w.]+)\}|([\w.]*\w))/g;
const renderable =
  /^context\.(error\.(responseType|message|messageString|validationErrorString)|requestId|extendedRequestId|stage|resourcePath|httpMethod|apiId)$/;

/** The references and directives of a template the rehearsal cannot render, to be reported before anything runs. */
export function unrenderableParts(template: string): string[] {
  const references = [...template.matchAll(referencePattern)]
    .map((match) => match[1] ?? match[2] ?? '')
    .filter((name) => !renderable.test(name))
    .map((name) => `$${name}`);
  const directives = [
    ...template.matchAll(/#(set|if|foreach|else|elseif|end|macro|include|parse|stop|break)\b/g),
  ].map((m) => m[0]);
  return [...references, ...directives];
}

export type GatewayErrorContext = {
  readonly type: string;
  readonly message: string;
  /** Overrides the type's own status (a Lambda proxy's function error is 502). */
  readonly status?: number;
  readonly values: Readonly<Record<string, string>>;
};

export type GatewayAnswer = {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
};

/**
 * API Gateway's answer for one of its own refusals: the response type's gateway response if
 * the template customises it, else DEFAULT_4XX or DEFAULT_5XX's, else API Gateway's
 * `{"message": …}`; its template rendered with the error's context.
 */
export function gatewayAnswer(
  responses: ReadonlyMap<string, GatewayResponseModel>,
  error: GatewayErrorContext,
): GatewayAnswer {
  const ownStatus = error.status ?? gatewayResponseStatus[error.type] ?? 500;
  const family = ownStatus >= 500 ? 'DEFAULT_5XX' : 'DEFAULT_4XX';
  const chosen = responses.get(error.type) ?? responses.get(family);
  const status = Number(chosen?.statusCode ?? ownStatus);
  const template = chosen?.templates['application/json'] ?? '{"message":$context.error.messageString}';
  const values: Record<string, string> = {
    'context.error.responseType': error.type,
    'context.error.message': error.message,
    'context.error.messageString': JSON.stringify(error.message),
    'context.error.validationErrorString': JSON.stringify(error.message),
    ...error.values,
  };
  const body = template.replace(
    referencePattern,
    (whole, braced: string | undefined, bare: string | undefined) => {
      const name = braced ?? bare ?? '';
      return values[name] ?? (whole.startsWith('$!') ? '' : whole);
    },
  );
  return {
    status,
    headers: { 'content-type': 'application/json', 'x-amzn-ErrorType': error.type, ...chosen?.headers },
    body,
  };
}
