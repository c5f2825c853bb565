import { ErrorTable, refused } from '../error-table.ts';

/** The sealing area's errors (docs/decisions/sealed-secrets.md), and their table. */
export class SealingError extends Error {
  override name = 'SealingError';
}

/**
 * A sealed copy that does not open here: bound to another node, relation or generation, or not
 * sealed to this node's key. The host reports the declaration `failed` with this message and
 * runs no hook; the message names bindings and nodes, never a secret.
 */
export class SealedSecretRefusedError extends SealingError {
  override name = 'SealedSecretRefusedError';
}

export const sealingErrors = new ErrorTable({
  SealingError: refused(SealingError, 422, 'sealing_failed'),
  SealedSecretRefusedError: refused(SealedSecretRefusedError, 422, 'sealed_copy_refused'),
});
