import { signalAuthorizerHandler } from '../lib/server/api/handlers/signal.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = signalAuthorizerHandler(partsFor(readConfig()));
