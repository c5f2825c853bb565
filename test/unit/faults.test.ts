import { describe, expect, it } from 'vitest';
import { isTransientFault } from '../../lib/server/core/faults.ts';

const named = (name: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name, ...extra });
const cancelled = (...codes: string[]) =>
  named('TransactionCanceledException', {
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

describe('isTransientFault', () => {
  it.each([
    ['a refused connection', Object.assign(new Error('connect'), { code: 'ECONNREFUSED' })],
    ['throttling', named('ThrottlingException')],
    ['a server fault', named('InternalServerError', { $fault: 'server' })],
    ['a timeout', named('TimeoutError')],
    ['a transaction that lost a race', cancelled('None', 'TransactionConflict')],
    ['a throttled transaction', cancelled('ThrottlingError', 'None')],
    ['a fault under a wrapper', new Error('wrapped', { cause: named('ThrottlingException') })],
  ])('is true for %s', (_, error) => {
    expect(isTransientFault(error)).toBe(true);
  });

  it.each([
    ['a failed condition', named('ConditionalCheckFailedException', { $fault: 'client' })],
    ['a transaction whose condition failed', cancelled('ConditionalCheckFailed', 'TransactionConflict')],
    ['a validation error (our defect)', named('ValidationException', { $fault: 'client' })],
    ['something else', new Error('boom')],
  ])('is false for %s', (_, error) => {
    expect(isTransientFault(error)).toBe(false);
  });
});
