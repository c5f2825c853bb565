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
    // No reserved concurrency: a reservation is a ceiling a stranger's connects could hold real
    // hosts under, and a new account's quota (10) refuses any. What bounds a stranger is IoT's
    // connect rate and the refusal before any read (docs/deploy.md, the broker's authorizer).
    handler: signalAuthorizerHandler,
  },
  {
    name: 'signal-presence',
    purpose: "records a host's connect and disconnect: online and last heard, the newer event winning",
    trigger: 'broker-lifecycle',
    access: ['presence:write', 'events:put'],
    handler: signalPresenceHandler,
  },
] as const satisfies readonly FunctionSpec[];
