import { meshPushesHandler } from '../lib/api/handlers/seeing.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = meshPushesHandler(partsFor(readConfig()));
