import { hostDeclarationHandler } from '../lib/server/api/handlers/host.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = hostDeclarationHandler(partsFor(readConfig()));
