import { healthHandler } from '../lib/server/api/handlers/health.ts';

export const handler = healthHandler();
