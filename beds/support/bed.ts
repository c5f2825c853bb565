import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DeleteTableCommand, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { inject, onTestFinished } from 'vitest';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningDynamoDBLocal, startDynamoDBLocal } from '../../lib/local/dynamodb-local.ts';
import { runtimeLines } from '../../lib/local/log-lines.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { localResourceNames } from '../../lib/server/setup/resources.ts';
import {
  holdsToken,
  printedJson,
  type Watched,
  watch,
  withTokensBlanked,
} from '../../test/support/processes.ts';

const root = resolve(import.meta.dirname, '../..');
const node = process.execPath;

export type RunOptions = { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string };

export type CommandResult = { readonly code: number | null; readonly output: string; readonly json: unknown };

/**
 * A bed: real processes (the local control plane, `mesh-host` agents, the store) in a folder
 * of their own. Every process's output is kept; when the scenario fails, all of it is shown.
 */
export class Bed {
  readonly dir: string;
  readonly name: string;
  /**
   * The control plane's table and queue names begin with this (MESH_RESOURCE_PREFIX), so beds
   * running side by side on the run's one DynamoDB Local never see each other's items.
   */
  readonly prefix: string;
  private readonly processes: Array<{ label: string; watched: Watched }> = [];
  private readonly commands: string[] = [];
  private store: RunningDynamoDBLocal | undefined;
  private storePort = 0;
  /** The run's DynamoDB Local, when the bed has no store of its own (see `sharedStore`). */
  private sharedStoreInUse: string | undefined;
  apiUrl = '';
  private client: ApiClient | undefined;

  constructor(name: string) {
    this.name = name;
    this.dir = mkdtempSync(join(tmpdir(), `mesh-bed-${name}-`));
    this.prefix = `bed-${name}-${randomBytes(3).toString('hex')}`;
  }

  /**
   * DynamoDB Local as the bed's own process, on disk, so the bed can stop and restart it;
   * `inMemory` for a bed that never stops it, where it writes faster.
   */
  async startStore(options: { readonly inMemory?: boolean } = {}): Promise<string> {
    this.storePort ||= await freePort();
    this.store = await startDynamoDBLocal({
      port: this.storePort,
      ...(options.inMemory ? {} : { dataDir: join(this.dir, 'store') }),
      // a bed's own store lives seconds between its stops, or half a minute of the large provider's
      // writes: C1 alone takes less CPU for either (docs/local-and-aws.md)
      quickStart: true,
      // a JVM on a loaded machine: the default 30 s is not always enough
      readyTimeoutMs: 90_000,
    });
    this.commands.push(`store started on :${this.storePort} (pid ${this.store.pid})`);
    return this.store.endpoint;
  }

  async stopStore(): Promise<void> {
    await this.store?.stop();
    this.commands.push(`store stopped (pid ${this.store?.pid})`);
    this.store = undefined;
  }

  get storeEndpoint(): string {
    return `http://127.0.0.1:${this.storePort}`;
  }

  /**
   * The local control plane (`npm start`), talking to the bed's store when there is one, else to
   * the run's; `entry` starts it through a bed's own entry point instead (one that puts a fault
   * in a part).
   */
  async startControlPlane(env: Record<string, string> = {}, entry = 'bin/local.ts'): Promise<string> {
    const port = await freePort();
    const processEnv: NodeJS.ProcessEnv = {
      ...process.env,
      MESH_PORT: String(port),
      MESH_MQTT_PORT: '0',
      MESH_DATA: join(this.dir, 'control'),
      MESH_LOG_FORMAT: 'json',
      MESH_RESOURCE_PREFIX: this.prefix,
      ...env,
    };
    delete processEnv.AWS_ENDPOINT_URL;
    delete processEnv.AWS_ENDPOINT_URL_SQS;
    delete processEnv.AWS_ENDPOINT_URL_DYNAMODB;
    if (this.storePort) processEnv.AWS_ENDPOINT_URL_DYNAMODB = this.storeEndpoint;
    else if (sharedStore) {
      this.sharedStoreInUse ??= await clearedTables(sharedStore, this.prefix);
      processEnv.AWS_ENDPOINT_URL_DYNAMODB = sharedStore;
    }
    const watched = this.spawn('control-plane', [join(root, entry)], processEnv);
    this.apiUrl = (await watched.waitForCode(runtimeLines.ready, { timeoutMs: 90_000 })).url;
    this.client = undefined;
    return this.apiUrl;
  }

  /** Where the control plane's DynamoDB is, for a bed that seeds its tables through the store. */
  get dynamodbEndpoint(): string {
    if (this.storePort) return this.storeEndpoint;
    if (!this.sharedStoreInUse) throw new Error('the bed has no store yet: start its control plane first');
    return this.sharedStoreInUse;
  }

  /** The physical name of one of the tables (`identity`, `inventory`). */
  tableName(table: 'identity' | 'inventory'): string {
    return localResourceNames(this.prefix)[`${table}Table`];
  }

  /**
   * The bed's control plane's API, called from this process as `mesh` calls it: for the looks a bed takes every quarter second, where a `mesh` process each time
   * would cost more than the look.
   */
  api(): ApiClient {
    this.client ??= new ApiClient(this.apiUrl, {});
    return this.client;
  }

  /** Notes a look the bed took in its log, when it saw something it had not seen before. */
  noteLook(what: string, seen: unknown): void {
    const line = `${what}: ${JSON.stringify(seen)}`;
    if (this.looks.get(what) === line) return;
    this.looks.set(what, line);
    this.commands.push(line);
  }
  private readonly looks = new Map<string, string>();

  /** Runs `mesh ARGS --json` against the bed's control plane. */
  async mesh(...args: string[]): Promise<CommandResult> {
    return this.run('mesh', [join(root, 'bin/mesh.ts'), '--api', this.apiUrl, '--json', ...args]);
  }

  /** Runs `mesh ARGS` as people run it, without --json: the text an operator reads or pastes. */
  async meshText(...args: string[]): Promise<CommandResult> {
    return this.run('mesh', [join(root, 'bin/mesh.ts'), '--api', this.apiUrl, ...args]);
  }

  /** Runs `mesh-host ARGS` to completion. */
  async meshHost(...args: string[]): Promise<CommandResult> {
    return this.run('mesh-host', [join(root, 'bin/mesh-host.ts'), ...args]);
  }

  hostDir(nodeName: string): string {
    const dir = join(this.dir, 'hosts', nodeName);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** Where the bed keeps one-time token files between `mesh token issue --out` and the enrol that reads them. */
  tokenFile(nodeName: string): string {
    const dir = join(this.dir, 'tokens');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return join(dir, `${nodeName}.token`);
  }

  /** Where a host's apply hook writes down what it applied. */
  recordDir(nodeName: string): string {
    const dir = join(this.dir, 'records', nodeName);
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** A long-running process the bed watches (a `mesh-host run`, an enrol left to finish on its own). */
  spawn(label: string, args: string[], env: NodeJS.ProcessEnv = process.env): Watched {
    return this.spawnExecutable(label, node, args, { env });
  }

  /** A long-running process from any executable (a packaged `mesh-host`, say). */
  spawnExecutable(label: string, command: string, args: string[], options: RunOptions = {}): Watched {
    if (this.stopped) throw new Error(`the bed has stopped: not starting ${label}`);
    const watched = watch(command, args, { env: options.env ?? process.env, cwd: options.cwd ?? root });
    this.processes.push({ label, watched });
    this.commands.push(`${label}: ${this.shown(command, args)}`);
    return watched;
  }

  /** A process the bed started, by its label. */
  process(label: string): Watched {
    const found = this.processes.find((entry) => entry.label === label);
    if (!found) throw new Error(`the bed started no process labelled ${label}`);
    return found.watched;
  }

  /**
   * Starts `mesh-host run` for an enrolled node with the recording apply hook, on its signal as
   * a normal install is; `interval` is how often it polls while the broker is away (default 30 s);
   * `args` are more options of `run` (`--check`, say).
   */
  startHost(
    nodeName: string,
    options: { applyDelayMs?: number; label?: string; interval?: number; args?: readonly string[] } = {},
  ): Watched {
    const interval = options.interval;
    return this.spawn(
      options.label ?? `host ${nodeName}`,
      [
        join(root, 'bin/mesh-host.ts'),
        'run',
        '--dir',
        this.hostDir(nodeName),
        ...(interval !== undefined ? ['--interval', String(interval)] : []),
        '--apply',
        `${node} ${join(root, 'beds/support/apply-hook.ts')}`,
        ...(options.args ?? []),
      ],
      {
        ...process.env,
        MESH_LOG_FORMAT: 'json',
        BED_RECORD_DIR: this.recordDir(nodeName),
        BED_APPLY_DELAY_MS: String(options.applyDelayMs ?? 0),
      },
    );
  }

  private run(label: string, args: string[]): Promise<CommandResult> {
    return this.runExecutable(label, node, args);
  }

  /** Runs COMMAND ARGS to completion, its output kept for a failing bed's message. */
  async runExecutable(
    label: string,
    command: string,
    args: string[],
    options: RunOptions = {},
  ): Promise<CommandResult> {
    if (this.stopped) throw new Error(`the bed has stopped: not running ${label}`);
    const watched = watch(command, args, { env: options.env ?? process.env, cwd: options.cwd ?? root });
    this.commands.push(`${label}: ${this.shown(command, args)}`);
    const { code } = await watched.exited();
    const output = watched.output();
    this.commands.push(`  -> exit ${code}: ${output.trim().split('\n').join('\n     ')}`);
    return { code, output, json: printedJson(output) };
  }

  /** A command line as the bed's log shows it: node's script, or the executable, then the arguments. */
  private shown(command: string, args: string[]): string {
    const words = command === node ? args : [command, ...args];
    return words.map((word) => word.replace(root, '.')).join(' ');
  }

  /** Everything every process said, labelled, for a failing bed's message; a token's secret blanked. */
  dump(): string {
    const sections = this.processes.map(
      ({ label, watched }) => `----- ${label} -----\n${watched.output().trimEnd() || '(no output)'}`,
    );
    return withTokensBlanked(
      [
        `===== bed ${this.name} in ${this.dir} =====`,
        '----- commands -----',
        ...this.commands,
        ...sections,
      ].join('\n'),
    );
  }

  /**
   * Where a token showed in what the bed keeps (a command line it ran, a process's output), by
   * label: a token belongs in an owner-only file, never in a command line, a log or a dump.
   */
  tokensShown(): string[] {
    const shown = this.commands.some(holdsToken) ? ['commands'] : [];
    for (const { label, watched } of this.processes) if (holdsToken(watched.output())) shown.push(label);
    return shown;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // A token file left by a scenario that failed before its enrol ended goes too, whatever else is kept.
    rmSync(join(this.dir, 'tokens'), { recursive: true, force: true });
    await this.stopProcesses(() => true);
    await this.store?.stop();
    if (this.sharedStoreInUse) await clearedTables(this.sharedStoreInUse, this.prefix);
  }
  private stopped = false;

  /** Removes the bed's folder: its hosts, records, store and control plane data. */
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async stopProcesses(which: (watched: Watched) => boolean): Promise<void> {
    for (const { watched } of [...this.processes].reverse()) {
      if (!which(watched)) continue;
      if (watched.child.exitCode === null && watched.child.signalCode === null) {
        watched.child.kill('SIGTERM');
        const timer = setTimeout(() => watched.child.kill('SIGKILL'), 10_000);
        await watched.exited();
        clearTimeout(timer);
      }
    }
  }
}

/**
 * The run's DynamoDB Local (test/support/shared-emulators.ts, the beds project's global setup),
 * which a bed's control plane uses unless the bed starts a store of its own to stop: one JVM for
 * all the beds rather than one each. Beds run side by side on it, each under its own table
 * prefix (`Bed.prefix`), and each deletes its tables when it stops, so the store does not grow
 * with the run. Absent when a bed runs outside that project.
 */
const sharedStore: string | undefined = (inject('endpoints') as { dynamodb?: string } | undefined)?.dynamodb;

/** Deletes the bed's control plane's tables from `endpoint`, if there; answers the endpoint. */
async function clearedTables(endpoint: string, prefix: string): Promise<string> {
  const names = localResourceNames(prefix);
  const client = makeDynamoDBClient({ region: 'us-east-1' }, { endpoint });
  try {
    for (const table of [names.inventoryTable, names.identityTable])
      await client.send(new DeleteTableCommand({ TableName: table })).catch((error: unknown) => {
        if (!(error instanceof ResourceNotFoundException)) throw error;
      });
  } finally {
    client.destroy();
  }
  return endpoint;
}

/**
 * Runs a scenario in a fresh bed; on failure the error carries every process's output and the
 * bed's folder is kept, to be looked at; otherwise the folder is removed.
 */
export async function inBed(name: string, scenario: (bed: Bed) => Promise<void>): Promise<void> {
  const bed = new Bed(name);
  let passed = false;
  // Also when vitest times the test out and leaves the scenario running: a bed's processes must
  // not outlive it, least of all on the run's shared store.
  onTestFinished(() => bed.stop());
  try {
    await scenario(bed);
    const shown = bed.tokensShown();
    if (shown.length > 0) throw new Error(`a one-time token showed in the bed's ${shown.join(', ')}`);
    passed = true;
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    failure.message = `${failure.message}\n\n${bed.dump()}`;
    throw failure;
  } finally {
    await bed.stop();
    if (passed) bed.remove();
  }
}

/**
 * Polls until `check` returns a value (not undefined), or fails naming what it waited for. The
 * deadline is generous: beds run side by side, and a report through the queue to the store took
 * over 30 s there on a loaded machine.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 120_000,
) {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolveSleep) => setTimeout(resolveSleep, 250));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`,
  );
}

export type NodeStatus = {
  node: string;
  enrolled: boolean;
  sentRevision: number | null;
  appliedRevision: number | null;
  reportState?: string | null;
  behind: boolean;
  online: boolean | null;
  lastHeard: string | null;
  /** Who holds it back, when something does (docs/decisions/held-back.md). */
  heldBack?: string;
  /** What its host last said of its machine, its agent version among them (docs/host-agent.md#facts). */
  facts?: { agent?: string };
};

/**
 * `mesh node add` + `mesh token issue --out FILE` + `mesh-host enrol --token-file FILE`, each
 * asserted to succeed; the token file is deleted after.
 */
export async function addAndEnrol(bed: Bed, node: string): Promise<void> {
  await expectOk(bed.mesh('node', 'add', node), `mesh node add ${node}`);
  await enrol(bed, node);
}

/** Enrols a host for a node in the mesh, as `addAndEnrol` does after the add. */
export async function enrol(bed: Bed, node: string): Promise<void> {
  const tokenFile = await issueTokenFile(bed, node);
  try {
    await expectOk(
      bed.meshHost(
        'enrol',
        '--api',
        bed.apiUrl,
        '--node',
        node,
        '--token-file',
        tokenFile,
        '--dir',
        bed.hostDir(node),
      ),
      `mesh-host enrol ${node}`,
    );
  } finally {
    rmSync(tokenFile, { force: true });
  }
}

/**
 * `mesh token issue NODE --out FILE`: the token goes to an owner-only file in the bed's folder
 * (answered), never through a command's output or onto a command line. The caller deletes it
 * once the enrol that reads it is done.
 */
export async function issueTokenFile(bed: Bed, node: string): Promise<string> {
  const file = bed.tokenFile(node);
  await expectOk(bed.mesh('token', 'issue', node, '--out', file), `mesh token issue ${node} --out`);
  const mode = statSync(file).mode & 0o777;
  if (mode !== 0o600)
    throw new Error(`mesh token issue --out wrote ${file} with mode ${mode.toString(8)}, not 600`);
  return file;
}

/** What `mesh status` shows, by node: the API's `GET /status`, read in this process. */
export async function status(bed: Bed): Promise<Map<string, NodeStatus>> {
  const { nodes } = await bed.api().call<{ nodes: NodeStatus[] }>('GET', '/status');
  bed.noteLook('GET /status', nodes);
  return byNode(nodes);
}

/** The same through `mesh status --json`, a process of its own, as a script reads it. */
export async function statusThroughMesh(bed: Bed): Promise<Map<string, NodeStatus>> {
  const answer = await expectOk(bed.mesh('status'), 'mesh status');
  return byNode((answer.json as { nodes: NodeStatus[] }).nodes);
}

const byNode = (nodes: NodeStatus[]) => new Map(nodes.map((entry) => [entry.node, entry]));

const appliedAtSent = (entry: NodeStatus | undefined): entry is NodeStatus =>
  entry !== undefined && entry.appliedRevision !== null && entry.appliedRevision === entry.sentRevision;

/**
 * Waits until every named node is seen applied at the revision it was sent, then answers their
 * lines as `mesh status --json` prints them (so every bed that waits so reads the command too).
 */
export async function appliedAsSent(bed: Bed, nodes: readonly string[]): Promise<NodeStatus[]> {
  const what = `${nodes.join(' and ')} to report applied at the revision they were sent`;
  await eventually(what, async () => {
    const all = await status(bed);
    return nodes.every((node) => appliedAtSent(all.get(node))) ? true : undefined;
  });
  const all = await statusThroughMesh(bed);
  const entries = nodes.map((node) => all.get(node));
  if (!entries.every(appliedAtSent))
    throw new Error(`mesh status disagreed with GET /status on ${what}: ${JSON.stringify(entries)}`);
  return entries;
}

export async function expectOk(result: Promise<CommandResult>, what: string): Promise<CommandResult> {
  const done = await result;
  if (done.code !== 0) throw new Error(`${what} exited ${done.code}:\n${done.output}`);
  return done;
}

/** `--check` with the beds' check (beds/support/check-hook.ts), as `mesh-host run` is given it. */
export const checkHook = `${node} ${join(root, 'beds/support/check-hook.ts')}`;

/** The version of `module` in the last declaration the node's apply hook applied, if any. */
export function appliedVersion(bed: Bed, node: string, module: string): string | null | undefined {
  const declaration = lastApplied<{ modules: Array<{ name: string; version: string | null }> }>(bed, node);
  return declaration?.modules.find((entry) => entry.name === module)?.version;
}

/** The last declaration the node's apply hook applied (as its host opened it: secrets in clear), if any. */
export function lastApplied<Declaration>(bed: Bed, node: string): Declaration | undefined {
  const dir = bed.recordDir(node);
  const latest = readdirSync(dir)
    .map((file) => /^applied-(\d+)\.json$/.exec(file)?.[1])
    .filter((revision): revision is string => revision !== undefined)
    .map(Number)
    .sort((a, b) => a - b)
    .at(-1);
  if (latest === undefined) return undefined;
  return JSON.parse(readFileSync(join(dir, `applied-${latest}.json`), 'utf8')) as Declaration;
}
