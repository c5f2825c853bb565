import { pushRunHandler } from '../lib/server/api/handlers/push-tasks.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = pushRunHandler(partsFor(readConfig()));
