import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';

/** One logger and one metrics namespace for the whole control plane; handlers add their context. */
export const logger = new Logger({
  serviceName: 'mesh',
  logLevel: (process.env.MESH_LOG_LEVEL as 'INFO') ?? 'INFO',
});
export const metrics = new Metrics({ namespace: 'Mesh', serviceName: 'mesh' });
