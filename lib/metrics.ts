import { Metrics } from '@aws-lambda-powertools/metrics';

/**
 * The control plane's metrics namespace. Kept apart from the logger so that only the functions
 * that publish metrics (the control consumer) load Powertools Metrics at start.
 */
export const metrics = new Metrics({ namespace: 'Mesh', serviceName: 'mesh' });
