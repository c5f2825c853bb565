import { hostKeysHandler } from '../lib/server/api/handlers/host-keys.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = hostKeysHandler(partsFor(readConfig()));
