import { signalAuthorizerHandler, signalPresenceHandler } from '../api/handlers/signal.ts';
import type { FunctionSpec } from './spec.ts';

/** The signal area's functions: who may connect to the broker, and presence from its lifecycle events. */
export const signalFunctions = [
  {
    name: 'signal-authorizer',
    purpose: "the broker's custom authorizer: checks a host's connect proof, allows its own topics only",
    trigger: 'broker-authorizer',
    // proofs:write for the replay guard: a password connects once.
    access: ['nodeKeys:verify', 'proofs:write'],
    timeoutSeconds: 5,
    // An unsigned custom authorizer can be called by anyone who knows its name: a bound on cost.
    reservedConcurrency: 10,
    handler: signalAuthorizerHandler,
  },
  {
    name: 'signal-presence',
    purpose: "records a host's connect and disconnect: online and last heard, the newer event winning",
    trigger: 'broker-lifecycle',
    access: ['presence:write'],
    handler: signalPresenceHandler,
  },
] as const satisfies readonly FunctionSpec[];
