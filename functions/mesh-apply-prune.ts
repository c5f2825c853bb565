import { meshApplyPruneHandler } from '../lib/api/handlers/mesh-file.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = meshApplyPruneHandler(partsFor(readConfig()));
