import { createHostAuthorizer, hostAuthorizerDeps } from '../lib/api/handlers/host-authorizer.ts';
import { readConfig } from '../lib/config.ts';

export const handler = createHostAuthorizer(hostAuthorizerDeps(readConfig()));
