import { nodeDisenrolHandler } from '../lib/api/handlers/enrolment.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = nodeDisenrolHandler(partsFor(readConfig()));
