import { meshPushPlanHandler } from '../lib/server/api/handlers/mesh.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = meshPushPlanHandler(partsFor(readConfig()));
