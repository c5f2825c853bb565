import { enrolmentStores } from '../lib/api/handlers/enrol-deps.ts';
import { createTokenRevokeHandler } from '../lib/api/handlers/token-revoke.ts';
import { readConfig } from '../lib/config.ts';

export const handler = createTokenRevokeHandler(enrolmentStores(readConfig()));
