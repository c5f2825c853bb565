import { pushRunHandler } from '../lib/api/handlers/push-tasks.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = pushRunHandler(partsFor(readConfig()));
