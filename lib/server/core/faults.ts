/**
 * Whether an AWS SDK error (or a socket error under it) means "not now" rather than "never":
 * the store could not be asked (refused, reset, timed out, throttled, failing on its side), as
 * opposed to a request it understood and rejected, which is our defect and never reclassified.
 * Read from the error's shape, not its class, so the core needs no SDK import and an error from
 * any client classifies the same way. Every area turns this into its own "try again" or hold.
 */
const transientNames = new Set([
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'Throttling',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'LimitExceededException',
  'InternalServerError',
  'InternalFailure',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'TransactionInProgressException',
  'TransactionConflictException',
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'AbortError',
  'KMS.ThrottlingException',
]);

const transientCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

type ErrorShape = {
  name?: unknown;
  code?: unknown;
  $fault?: unknown;
  $retryable?: unknown;
  $metadata?: { httpStatusCode?: unknown };
  cause?: unknown;
  CancellationReasons?: Array<{ Code?: unknown } | undefined>;
};

/**
 * A cancelled transaction is "not now" when it lost a race or was throttled, and none of its
 * conditions failed: a failed condition is an answer, never a fault.
 */
const transientCancellations = new Set([
  'TransactionConflict',
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
]);

function isTransientCancellation(shape: ErrorShape): boolean {
  if (shape.name !== 'TransactionCanceledException' || !Array.isArray(shape.CancellationReasons))
    return false;
  const codes = shape.CancellationReasons.map((reason) => reason?.Code);
  return (
    codes.some((code) => typeof code === 'string' && transientCancellations.has(code)) &&
    !codes.includes('ConditionalCheckFailed')
  );
}

/**
 * Whether the request lost a race with a transaction in flight on one of its items and nothing
 * else: DynamoDB cancels the later of two transactions touching one item (`TransactionConflict`)
 * and refuses a plain write to an item a transaction holds (`TransactionConflictException`).
 * Neither is an answer about the data: the same request a moment later is decided on its merits.
 */
export function isTransactionConflict(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const shape = error as ErrorShape;
  if (shape.name === 'TransactionConflictException') return true;
  if (shape.name !== 'TransactionCanceledException' || !Array.isArray(shape.CancellationReasons))
    return false;
  const codes = shape.CancellationReasons.map((reason) => reason?.Code ?? 'None');
  return (
    codes.includes('TransactionConflict') &&
    codes.every((code) => code === 'TransactionConflict' || code === 'None')
  );
}

export function isTransientFault(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  const shape = error as ErrorShape;
  if (isTransientCancellation(shape)) return true;
  if (shape.$retryable) return true;
  if (shape.$fault === 'server') return true;
  const status = shape.$metadata?.httpStatusCode;
  if (typeof status === 'number' && (status >= 500 || status === 429)) return true;
  if (typeof shape.name === 'string' && transientNames.has(shape.name)) return true;
  if (typeof shape.code === 'string' && transientCodes.has(shape.code)) return true;
  if (error instanceof AggregateError && error.errors.some((inner) => isTransientFault(inner, depth + 1)))
    return true;
  return isTransientFault(shape.cause, depth + 1);
}
