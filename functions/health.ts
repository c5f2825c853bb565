import { healthHandler } from '../lib/api/handlers/health.ts';

export const handler = healthHandler();
