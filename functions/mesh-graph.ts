import { meshGraphHandler } from '../lib/server/api/handlers/views.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = meshGraphHandler(partsFor(readConfig()));
