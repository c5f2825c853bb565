import { enrolmentStores } from '../lib/api/handlers/enrol-deps.ts';
import { createTokenIssueHandler } from '../lib/api/handlers/token-issue.ts';
import { readConfig } from '../lib/config.ts';

export const handler = createTokenIssueHandler(enrolmentStores(readConfig()));
