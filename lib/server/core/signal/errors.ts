import { ErrorTable, internal } from '../error-table.ts';

/** The signal area's one error tree: the change signal, the broker's authorizer and presence. */
export class SignalError extends Error {
  override name = 'SignalError';
}

/** A presence event older than the one recorded: a late "disconnected" never hides a newer connect. */
export class StalePresenceError extends SignalError {
  override name = 'StalePresenceError';
}

/** A presence event for a node the mesh does not have (removed since it connected). */
export class PresenceOfUnknownNodeError extends SignalError {
  override name = 'PresenceOfUnknownNodeError';
}

/** The embedded broker is not running, so a signal could not be published locally. */
export class BrokerAwayError extends SignalError {
  override name = 'BrokerAwayError';
}

/** None reaches a client: presence settles them, and a signal that could not be published is counted. */
export const signalErrors = new ErrorTable({
  SignalError: internal(SignalError),
  StalePresenceError: internal(StalePresenceError),
  PresenceOfUnknownNodeError: internal(PresenceOfUnknownNodeError),
  BrokerAwayError: internal(BrokerAwayError),
});
