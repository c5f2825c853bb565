import { rolloutUndoHandler } from '../lib/api/handlers/rollouts.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = rolloutUndoHandler(partsFor(readConfig()));
