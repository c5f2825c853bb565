import { hostDeclarationHandler } from '../lib/api/handlers/host.ts';
import { readConfig } from '../lib/config.ts';
import { partsFor } from '../lib/wiring.ts';

export const handler = hostDeclarationHandler(partsFor(readConfig()));
