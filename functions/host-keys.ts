import { hostKeysHandler } from '../lib/api/handlers/host-keys.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = hostKeysHandler(partsFor(readConfig()));
