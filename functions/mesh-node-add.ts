import { meshNodeAddHandler } from '../lib/server/api/handlers/mesh.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = meshNodeAddHandler(partsFor(readConfig()));
