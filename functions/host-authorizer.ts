import { hostAuthorizerHandler } from '../lib/api/handlers/host-authorizer.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = hostAuthorizerHandler(partsFor(readConfig()));
