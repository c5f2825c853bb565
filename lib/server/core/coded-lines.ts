/**
 * A line a Mesh process prints that a program may read: a stable code, a level, and the text
 * for people built from typed fields. People read the text; programs (an operator's scripts,
 * the beds, the benches) read the code and the fields, which keep their meaning when the words
 * change. Every code is listed in docs/codes.md; test/unit/coded-lines.test.ts holds the list.
 */
import type { Log } from './ports.ts';

export type Level = 'info' | 'warn' | 'error';

export type CodedLine<Fields extends object> = {
  readonly code: string;
  readonly level: Level;
  readonly text: (fields: Fields) => string;
};

/** One line as said: what `--json` (or MESH_LOG_FORMAT=json) prints as `{code, level, message, ...fields}`. */
export type Said = {
  readonly code: string;
  readonly level: Level;
  readonly message: string;
  readonly fields: Readonly<Record<string, unknown>>;
};

/** `code`, `level` and `message` are the line's own keys; a field may not take one of them. */
type Reserved = { readonly code?: never; readonly level?: never; readonly message?: never };

export function codedLine<Fields extends object = Record<string, never>>(
  code: string,
  level: Level,
  text: (fields: Fields & Reserved) => string,
): CodedLine<Fields & Reserved> {
  return { code, level, text };
}

export function say<Fields extends object>(line: CodedLine<Fields>, fields: Fields): Said {
  return {
    code: line.code,
    level: line.level,
    message: line.text(fields),
    fields: { ...(fields as Record<string, unknown>) },
  };
}

/** The fields of `said` when it is a `line`, typed as that line's; undefined when it is another. */
export function fieldsOf<Fields extends object>(said: Said, line: CodedLine<Fields>): Fields | undefined {
  return said.code === line.code ? (said.fields as Fields) : undefined;
}

/** The line for programs: one JSON object, code first. */
export function jsonLine(said: Said): string {
  return JSON.stringify({ code: said.code, level: said.level, message: said.message, ...said.fields });
}

/**
 * Logs a line through the Log port (Powertools' JSON on AWS and in `npm start`): the text is the
 * log's message, and the code and the fields sit beside it, as `extra` does (the error, say).
 */
export function logLine(log: Log, said: Said, extra: Record<string, unknown> = {}): void {
  log[said.level](said.message, { code: said.code, ...said.fields, ...extra });
}

/** The line as printed, newline included: `prefix` and the text for people, or the JSON line. */
export function printedLine(said: Said, format: LineFormat, prefix = ''): string {
  return format === 'json' ? `${jsonLine(said)}\n` : `${prefix}${said.message}\n`;
}

/** Where a process's lines go: the text for people, or one JSON object a line for programs. */
export type LineFormat = 'text' | 'json';

/** MESH_LOG_FORMAT=json asks for JSON lines; anything else (or nothing) keeps the text. */
export function lineFormatOf(value: string | undefined): LineFormat {
  return value?.toLowerCase() === 'json' ? 'json' : 'text';
}
