import { meshNodeRemoveHandler } from '../lib/api/handlers/mesh-removals.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = meshNodeRemoveHandler(partsFor(readConfig()));
