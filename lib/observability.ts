import { Logger } from '@aws-lambda-powertools/logger';

const logLevels = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'CRITICAL', 'SILENT'] as const;
type LogLevel = (typeof logLevels)[number];

/** An unknown level falls back to INFO: a typo in a variable must not stop every handler. */
export function logLevelOf(value: string | undefined): LogLevel {
  const wanted = value?.toUpperCase();
  return logLevels.find((level) => level === wanted) ?? 'INFO';
}

/**
 * One logger for the whole control plane, made once per process;
 * MESH_LOG_LEVEL (set by the CDK beside POWERTOOLS_LOG_LEVEL) is read here and only here.
 */
export const logger = new Logger({ serviceName: 'mesh', logLevel: logLevelOf(process.env.MESH_LOG_LEVEL) });
