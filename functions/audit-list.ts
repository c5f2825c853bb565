import { auditListHandler } from '../lib/server/api/handlers/audit.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = auditListHandler(partsFor(readConfig()));
