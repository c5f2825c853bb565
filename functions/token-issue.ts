import { tokenIssueHandler } from '../lib/server/api/handlers/enrolment.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = tokenIssueHandler(partsFor(readConfig()));
