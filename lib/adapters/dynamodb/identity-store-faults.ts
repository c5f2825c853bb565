import { isTransientFault } from '../../core/faults.ts';

/** A store that could not be asked, as opposed to a request it understood and rejected. */
export const isStoreUnreachable = isTransientFault;

/** Rethrows `error`, wrapped by `wrap` when it means the store could not be asked. */
export function rethrowStoreFault(error: unknown, wrap: (cause: unknown) => Error): never {
  if (isStoreUnreachable(error)) throw wrap(error);
  throw error;
}
