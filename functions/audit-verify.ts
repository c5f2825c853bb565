import { auditVerifyHandler } from '../lib/api/handlers/audit.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = auditVerifyHandler(partsFor(readConfig()));
