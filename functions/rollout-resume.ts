import { rolloutResumeHandler } from '../lib/server/api/handlers/rollouts.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = rolloutResumeHandler(partsFor(readConfig()));
