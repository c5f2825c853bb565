import { productionMeshDeps } from '../lib/api/handlers/mesh-deps.ts';
import { createMeshConsumeHandler } from '../lib/api/handlers/mesh-handlers.ts';
import { readConfig } from '../lib/config.ts';

export const handler = createMeshConsumeHandler(productionMeshDeps(readConfig()));
