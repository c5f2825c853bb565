import { meshPushPlanHandler } from '../lib/api/handlers/mesh.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = meshPushPlanHandler(partsFor(readConfig()));
