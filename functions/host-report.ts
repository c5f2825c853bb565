import { hostReportHandler } from '../lib/api/handlers/host.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = hostReportHandler(partsFor(readConfig()));
