import { createEnrolHandler } from '../lib/api/handlers/enrol.ts';
import { enrolmentStores } from '../lib/api/handlers/enrol-deps.ts';
import { readConfig } from '../lib/config.ts';

export const handler = createEnrolHandler(enrolmentStores(readConfig()));
