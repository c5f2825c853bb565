import { summaryAggregatorHandler } from '../lib/api/handlers/summary.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = summaryAggregatorHandler(partsFor(readConfig()));
