import { controlUpgradeHandler } from '../lib/server/api/handlers/control.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = controlUpgradeHandler(partsFor(readConfig()));
