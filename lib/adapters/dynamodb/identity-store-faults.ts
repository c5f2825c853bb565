/**
 * Tells a store that could not be asked (refused, reset, timed out, throttled, failing on its
 * side) from a request the store understood and rejected. The first is "try again" for the
 * host; the second is our defect and must stay a 500, so it is never reclassified.
 */
const retryableNames = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionConflictException',
  'TransactionInProgressException',
  'AbortError',
]);

const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

type SdkLike = {
  name?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: number };
  cause?: unknown;
};

export function isStoreUnreachable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as SdkLike;
  if (e.name && retryableNames.has(e.name)) return true;
  if (e.code && networkCodes.has(e.code)) return true;
  if (e.$fault === 'server' || e.$retryable) return true;
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 500) return true;
  if (e.cause !== undefined && e.cause !== error) return isStoreUnreachable(e.cause);
  return false;
}

/** Rethrows `error`, wrapped by `wrap` when it means the store could not be asked. */
export function rethrowStoreFault(error: unknown, wrap: (cause: unknown) => Error): never {
  if (isStoreUnreachable(error)) throw wrap(error);
  throw error;
}
