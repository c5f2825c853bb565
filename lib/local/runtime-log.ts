import type { LineFormat } from '../server/core/coded-lines.ts';
import type { Log } from '../server/core/ports.ts';
import type { LogLevel } from '../server/setup/config.ts';
import { powertoolsLog } from '../server/setup/observability.ts';

const rank: Readonly<Record<LogLevel, number>> = {
  TRACE: 0,
  DEBUG: 1,
  INFO: 2,
  WARN: 3,
  ERROR: 4,
  CRITICAL: 5,
  SILENT: 6,
};

/**
 * What the handlers log on `npm start`, in the runtime's own format: Powertools' JSON lines (as
 * Lambda writes them) under MESH_LOG_FORMAT=json, else one line for people each, `mesh: ` and the
 * message with its cause's message. A stack is for a failure nobody foresaw: printed only at
 * MESH_LOG_LEVEL=DEBUG (or TRACE), never for a line that merely names an error.
 */
export function runtimeLog(
  format: LineFormat,
  level: LogLevel,
  stream: NodeJS.WritableStream = process.stderr,
): Log {
  if (format === 'json') return powertoolsLog(level);
  const at = (lineLevel: LogLevel) => (message: string, extra?: Record<string, unknown>) => {
    if (rank[lineLevel] < rank[level]) return;
    const error = extra?.error;
    const cause =
      error instanceof Error
        ? error.message
        : typeof error === 'string' && error !== message
          ? error
          : undefined;
    const stack = error instanceof Error && rank[level] <= rank.DEBUG ? `\n${error.stack ?? ''}` : '';
    stream.write(`mesh: ${message}${cause && !message.includes(cause) ? `: ${cause}` : ''}${stack}\n`);
  };
  return { info: at('INFO'), warn: at('WARN'), error: at('ERROR') };
}
