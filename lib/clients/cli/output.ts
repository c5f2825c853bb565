import { type CodedLine, printedLine, say } from '../../server/core/coded-lines.ts';

/**
 * Where a command's results go: lines for people, or one JSON document for scripts (`--json`).
 * What it says on the way (progress, notes, failures) goes to stderr, so it never mixes into the
 * JSON on stdout: a line for people, or under `--json` one JSON line with its code
 * (lib/clients/cli/output-lines.ts).
 */
export type Output = {
  readonly json: boolean;
  /** A line for people; dropped under --json. */
  line(text: string): void;
  /** The command's result for scripts; printed only under --json. */
  result(value: unknown): void;
  /** A coded line on stderr: progress of a long operation, a note, a failure (after `mesh: `). */
  say<Fields extends object>(line: CodedLine<Fields>, fields: Fields): void;
};

export function makeOutput(json: boolean, streams = { out: process.stdout, err: process.stderr }): Output {
  return {
    json,
    line: (text) => {
      if (!json) streams.out.write(`${text}\n`);
    },
    result: (value) => {
      if (json) streams.out.write(`${JSON.stringify(value, null, 2)}\n`);
    },
    say: (line, fields) => {
      const said = say(line, fields);
      streams.err.write(printedLine(said, json ? 'json' : 'text', said.level === 'error' ? 'mesh: ' : ''));
    },
  };
}
