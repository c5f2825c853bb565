import { meshUploadHandler } from '../lib/server/api/handlers/mesh-file.ts';
import { readConfig } from '../lib/server/setup/config.ts';
import { partsFor } from '../lib/server/wiring/parts.ts';

export const handler = meshUploadHandler(partsFor(readConfig()));
