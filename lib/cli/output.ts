/**
 * Where a command's results go: lines for people, or one JSON document for scripts (`--json`).
 * Progress goes to stderr so it never mixes into JSON on stdout.
 */
export type Output = {
  readonly json: boolean;
  /** A line for people; dropped under --json. */
  line(text: string): void;
  /** The command's result for scripts; printed only under --json. */
  result(value: unknown): void;
  /** Progress of a long operation; to stderr. */
  progress(text: string): void;
  /** An error line; to stderr. */
  error(text: string): void;
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
    progress: (text) => {
      if (!json) streams.err.write(`${text}\n`);
    },
    error: (text) => streams.err.write(`${text}\n`),
  };
}
