import { Logger } from '@aws-lambda-powertools/logger';
import type { Log } from '../core/ports.ts';
import type { LogLevel } from './config.ts';

/** Powertools' logger behind the core's small Log port; one per process, made by the wiring. */
export function powertoolsLog(level: LogLevel): Log {
  const logger = new Logger({ serviceName: 'mesh', logLevel: level });
  return {
    info: (message, extra) => logger.info(message, extra ?? {}),
    warn: (message, extra) => logger.warn(message, extra ?? {}),
    error: (message, extra) => logger.error(message, extra ?? {}),
  };
}
