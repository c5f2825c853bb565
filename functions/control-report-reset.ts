import { controlReportResetHandler } from '../lib/api/handlers/control.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = controlReportResetHandler(partsFor(readConfig()));
