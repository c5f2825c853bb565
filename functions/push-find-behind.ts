import { pushFindBehindHandler } from '../lib/server/api/handlers/push-tasks.ts';
import { readConfig } from '../lib/server/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = pushFindBehindHandler(partsFor(readConfig()));
