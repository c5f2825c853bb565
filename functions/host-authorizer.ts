import { hostAuthorizerHandler } from '../lib/server/api/handlers/host-authorizer.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = hostAuthorizerHandler(partsFor(readConfig()));
