import { meshRotateHandler } from '../lib/server/api/handlers/mesh-removals.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = meshRotateHandler(partsFor(readConfig()));
