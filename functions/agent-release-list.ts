import { listReleasesHandler } from '../lib/server/api/handlers/agent-releases.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = listReleasesHandler(partsFor(readConfig()));
