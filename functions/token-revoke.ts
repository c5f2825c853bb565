import { tokenRevokeHandler } from '../lib/server/api/handlers/enrolment.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = tokenRevokeHandler(partsFor(readConfig()));
