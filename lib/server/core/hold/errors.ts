import { ErrorTable, refused } from '../error-table.ts';

/** The hold area's one error tree (lib/core/hold: freezes), and at the end its table: one row each. */
export class HoldError extends Error {
  override name = 'HoldError';
}

/** A freeze asked for with what cannot be read: a selector, a time, an empty reason. */
export class FreezeUsageError extends HoldError {
  override name = 'FreezeUsageError';
}

/** `mesh unfreeze` names no freeze in force. */
export class FreezeNotFoundError extends HoldError {
  override name = 'FreezeNotFoundError';
  readonly on: string;
  constructor(on: string, inForce: readonly string[], options?: ErrorOptions) {
    super(
      `no freeze ${on === 'all' ? '--all' : `on ${on}`} is in force${
        inForce.length > 0
          ? `; the freezes are: ${inForce.map((f) => (f === 'all' ? '--all' : f)).join(', ')}`
          : ''
      }`,
      options,
    );
    this.on = on;
  }
}

/** More freezes than maxFreezes at once: lift some, or freeze by a broader selector. */
export class TooManyFreezesError extends HoldError {
  override name = 'TooManyFreezesError';
}

export const holdErrors = new ErrorTable({
  HoldError: refused(HoldError, 409, 'hold_refused'),
  FreezeUsageError: refused(FreezeUsageError, 400, 'freeze_usage'),
  FreezeNotFoundError: refused(FreezeNotFoundError, 404, 'freeze_not_found', {
    details: (error: FreezeNotFoundError) => ({ on: error.on }),
  }),
  TooManyFreezesError: refused(TooManyFreezesError, 409, 'too_many_freezes'),
});
