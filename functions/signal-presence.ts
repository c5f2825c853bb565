import { signalPresenceHandler } from '../lib/api/handlers/signal.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = signalPresenceHandler(partsFor(readConfig()));
