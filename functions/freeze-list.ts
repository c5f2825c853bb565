import { freezeListHandler } from '../lib/api/handlers/holds.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = freezeListHandler(partsFor(readConfig()));
