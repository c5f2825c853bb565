import { freezeHandler } from '../lib/server/api/handlers/holds.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = freezeHandler(partsFor(readConfig()));
