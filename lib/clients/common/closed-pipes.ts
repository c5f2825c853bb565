/**
 * A reader that stops early (`mesh status | head -3`) closes the pipe: the next write fails with
 * EPIPE, which Node raises as an unhandled 'error' and prints as a stack trace. Once a stream's
 * reader is gone, what is left to print goes nowhere and the command still finishes, so its exit
 * code (a push that went on, a rollout that halted) stays the one it reached.
 */
export function quietWhenReaderCloses(
  streams: readonly NodeJS.WriteStream[] = [process.stdout, process.stderr],
) {
  for (const stream of streams)
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
      stream.write = (() => true) as typeof stream.write;
    });
}
