#!/usr/bin/env node
import { LocalRuntimeError } from '../lib/runtime/errors.ts';
import { startLocalRuntime } from '../lib/runtime/local-runtime.ts';

/** `npm start`: the whole control plane on this machine, data kept in MESH_DATA (default .mesh/). */
const port = Number(process.env.MESH_PORT ?? 4600);
const dataDir = process.env.MESH_DATA ?? '.mesh';

if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(
    `mesh: MESH_PORT must be a port number, not ${JSON.stringify(process.env.MESH_PORT)}\n`,
  );
  process.exit(2);
}

const started = Date.now();
try {
  const runtime = await startLocalRuntime({
    port,
    dataDir,
    onProgress: (line) => process.stdout.write(`mesh: ${line}\n`),
  });
  const { emulators } = runtime;
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    [
      `mesh: control plane ready in ${seconds} s at ${runtime.url}`,
      `mesh: data kept in ${runtime.dataDir}`,
      `mesh: DynamoDB ${emulators.emulated.dynamodb ? 'Local' : 'given'} at ${emulators.endpoints.dynamodb}, SQS ${emulators.emulated.sqs ? '(fauxqs)' : 'given'} at ${emulators.endpoints.sqs}`,
      'mesh: press Ctrl-C to stop',
      '',
    ].join('\n'),
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`mesh: ${signal} received, stopping\n`);
    await runtime.stop();
    process.stdout.write('mesh: stopped\n');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
} catch (error) {
  if (error instanceof LocalRuntimeError) {
    process.stderr.write(`mesh: ${error.message}\n`);
    process.exit(1);
  }
  throw error;
}
