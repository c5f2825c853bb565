import { meshGraphHandler } from '../lib/api/handlers/seeing.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = meshGraphHandler(partsFor(readConfig()));
