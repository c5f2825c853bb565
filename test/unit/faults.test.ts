import { describe, expect, it } from 'vitest';
import { isTransactionConflict, isTransientFault } from '../../lib/server/core/faults.ts';
import { askStore, conflictRetries, StoreUnavailableError } from '../../lib/server/core/unavailable.ts';

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

describe('a request that lost a race with a transaction in flight', () => {
  it('is told from a failed condition and from a throttle', () => {
    expect(isTransactionConflict(cancelled('None', 'TransactionConflict'))).toBe(true);
    expect(isTransactionConflict(named('TransactionConflictException'))).toBe(true);
    expect(isTransactionConflict(cancelled('TransactionConflict', 'ConditionalCheckFailed'))).toBe(false);
    expect(isTransactionConflict(cancelled('ThrottlingError', 'TransactionConflict'))).toBe(false);
  });

  it('is asked again until the other transaction is done, then decided on its merits', async () => {
    let asked = 0;
    const answer = await askStore('writing', async () => {
      asked += 1;
      if (asked < 3) throw cancelled('None', 'TransactionConflict');
      return 'written';
    });
    expect({ answer, asked }).toEqual({ answer: 'written', asked: 3 });

    let raced = 0;
    const lost = askStore('writing', async () => {
      raced += 1;
      throw raced === 1 ? cancelled('TransactionConflict') : cancelled('ConditionalCheckFailed');
    });
    await expect(lost).rejects.toMatchObject({ name: 'TransactionCanceledException' });
    expect(raced).toBe(2);
  });

  it('is "try again" once it has lost every attempt, and a failed condition is never asked again', async () => {
    let asked = 0;
    const always = askStore('writing', async () => {
      asked += 1;
      throw cancelled('TransactionConflict');
    });
    await expect(always).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(asked).toBe(conflictRetries.attempts);

    let once = 0;
    await expect(
      askStore('writing', async () => {
        once += 1;
        throw cancelled('ConditionalCheckFailed');
      }),
    ).rejects.toMatchObject({ name: 'TransactionCanceledException' });
    expect(once).toBe(1);
  });
});
