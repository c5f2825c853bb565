import { meshSummaryHandler } from '../lib/server/api/handlers/summary.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = meshSummaryHandler(partsFor(readConfig()));
