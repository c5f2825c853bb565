import { meshApplyHandler } from '../lib/server/api/handlers/mesh-file.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = meshApplyHandler(partsFor(readConfig()));
