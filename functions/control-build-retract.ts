import { controlBuildRetractHandler } from '../lib/server/api/handlers/control.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = controlBuildRetractHandler(partsFor(readConfig()));
