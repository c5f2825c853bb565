import { join, resolve } from 'node:path';
import { GetItemCommand, QueryCommand } from '@aws-sdk/client-dynamodb';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SetQueueAttributesCommand,
} from '@aws-sdk/client-sqs';
import { type FauxqsServer, startFauxqs } from 'fauxqs';
import { hostApiClient } from '../../lib/clients/host/host-api-client.ts';
import { generateNodeKeys, type NodeKeys } from '../../lib/clients/host/keys.ts';
import { runtimeLines } from '../../lib/local/log-lines.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { makeDynamoDBClient, makeSQSClient } from '../../lib/server/adapters/aws-clients.ts';
import { reportItemKey } from '../../lib/server/adapters/dynamodb/keys.ts';
import { markedPartition } from '../../lib/server/adapters/dynamodb/mesh-items.ts';
import { localResourceNames } from '../../lib/server/setup/resources.ts';
import { codedLineReader, type Heard, printedJson, type Watched } from '../../test/support/processes.ts';
import { type BenchAgents, startAgents } from './agents.ts';
import {
  type Accounting,
  account,
  type Evidence,
  emptyEvidence,
  ReportLedger,
  readConsumerLines,
  reportKey,
} from './report-ledger.ts';

const root = resolve(import.meta.dirname, '../..');

/** What the rig runs its processes with: a bed (beds/support/bed.ts) or the bench's own. */
export type RigProcesses = {
  readonly dir: string;
  /** DynamoDB Local as its own process, on disk, on the same port each time; answers its endpoint. */
  startStore(): Promise<string>;
  stopStore(): Promise<void>;
  spawn(label: string, args: string[], env: NodeJS.ProcessEnv): Watched;
};

export type RigOptions = {
  readonly processes: RigProcesses;
  /** Enrolled nodes, each with a real host agent reporting. */
  readonly hosts: number;
  /** Nodes without a host, so a push has more to send. */
  readonly loadNodes: number;
  /** The agents' poll interval and heartbeat. */
  readonly intervalMs: number;
  readonly heartbeatMs: number;
  /** The consumer's hold bound (MESH_HOLD_BOUND_SECONDS). @default 120, the control plane's own */
  readonly holdBoundSeconds?: number;
  /**
   * The control queue's visibility timeout, set again after each control plane start (whose
   * provisioning brings it back to 180 s). A batch a kill caught in flight comes back after it:
   * a bed sets the consumer's own timeout (30 s) so that costs seconds, not three minutes, and
   * keeps its settle window short. @default the queue's own
   */
  readonly visibilitySeconds?: number;
};

/**
 * The control plane (`bin/local.ts`, its own process) on a store and a queue that outlive it:
 * DynamoDB Local as its own process, fauxqs in this one, both on disk, so each can be stopped
 * and started again, and the control plane killed and started again, while the hosts' agents
 * (the real run loop, `HttpControlPlane` over `hostApiClient`) report. Every report they make
 * is noted (`ReportLedger`), and after each scenario accounted for from what the consumer said
 * (its log lines), the dead-letter queue's copies and the store.
 */
export class FaultRig {
  readonly ledger = new ReportLedger();
  readonly evidence: Evidence = emptyEvidence();
  readonly keys = new Map<string, NodeKeys>();
  readonly hosts: string[];
  readonly loadNodes: string[];
  apiUrl = '';
  private readonly runs: Watched[] = [];
  private queue: FauxqsServer | undefined;
  private queuePort = 0;
  private apiPort = 0;
  private mqttPort = 0;
  private storeEndpoint = '';
  private agents: BenchAgents | undefined;
  private readonly names = localResourceNames();
  private readonly located = () => ({
    region: 'us-east-1',
    endpoints: { dynamodb: this.storeEndpoint, sqs: `http://127.0.0.1:${this.queuePort}` },
  });

  private readonly options: RigOptions;

  constructor(options: RigOptions) {
    this.options = options;
    this.hosts = Array.from({ length: options.hosts }, (_, index) => `host-${index + 1}`);
    this.loadNodes = Array.from({ length: options.loadNodes }, (_, index) => `load-${index + 1}`);
  }

  /** Store, queue and control plane up; every node added with module `app`, the hosts enrolled, all pushed. */
  async start(): Promise<void> {
    this.storeEndpoint = await this.options.processes.startStore();
    this.queuePort = await freePort();
    await this.startQueue();
    [this.apiPort, this.mqttPort] = [await freePort(), await freePort()];
    await this.startControlPlane();
    for (const node of [...this.hosts, ...this.loadNodes]) {
      await this.operator('POST', '/nodes', { node });
      await this.operator('PUT', `/nodes/${node}/modules/app`, {});
    }
    for (const node of this.hosts) {
      const { token } = (await this.operator('POST', `/nodes/${node}/token`, {})) as { token: string };
      const { keys } = await generateNodeKeys();
      await this.operator('POST', '/enrol', {
        node,
        token,
        keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
      });
      this.keys.set(node, keys);
    }
    await this.operator('POST', '/push', { behind: true });
  }

  async startControlPlane(): Promise<void> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      MESH_PORT: String(this.apiPort),
      MESH_MQTT_PORT: String(this.mqttPort),
      MESH_DATA: join(this.options.processes.dir, 'control'),
      MESH_LOG_LEVEL: 'INFO',
      MESH_LOG_FORMAT: 'json',
      ...(this.options.holdBoundSeconds
        ? { MESH_HOLD_BOUND_SECONDS: String(this.options.holdBoundSeconds) }
        : {}),
      AWS_ENDPOINT_URL_DYNAMODB: this.storeEndpoint,
      AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${this.queuePort}`,
    };
    delete env.AWS_ENDPOINT_URL;
    const run = this.options.processes.spawn(
      `control-plane #${this.runs.length + 1}`,
      [join(root, 'bin/local.ts')],
      env,
    );
    this.runs.push(run);
    this.apiUrl = (await run.waitForCode(runtimeLines.ready, { timeoutMs: 90_000 })).url;
    if (this.options.visibilitySeconds !== undefined)
      await this.setVisibility(this.options.visibilitySeconds);
  }

  private async setVisibility(seconds: number): Promise<void> {
    const sqs = makeSQSClient(this.located());
    try {
      const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: this.names.controlQueue }));
      await sqs.send(
        new SetQueueAttributesCommand({ QueueUrl, Attributes: { VisibilityTimeout: String(seconds) } }),
      );
    } finally {
      sqs.destroy();
    }
  }

  /** SIGKILL: nothing of the control plane gets to finish. */
  async killControlPlane(): Promise<void> {
    const run = this.runs.at(-1);
    run?.child.kill('SIGKILL');
    await run?.exited();
  }

  /** Kills the control plane the moment it prints a coded line `where` takes, then waits for it to die. */
  killWhen(where: (said: Heard) => boolean): Promise<void> {
    const run = this.runs.at(-1) as Watched;
    return new Promise((resolveKill) => {
      let killed = false;
      const read = codedLineReader((said) => {
        if (killed || !where(said)) return;
        killed = true;
        run.child.stdout?.off('data', onData);
        run.child.kill('SIGKILL');
        void run.exited().then(() => resolveKill());
      });
      const onData = (chunk: Buffer) => read(chunk.toString());
      run.child.stdout?.on('data', onData);
    });
  }

  stopStore = () => this.options.processes.stopStore();
  startStore = async () => {
    await this.options.processes.startStore();
  };

  async startQueue(): Promise<void> {
    this.queue = await startFauxqs({
      port: this.queuePort,
      logger: false,
      dataDir: join(this.options.processes.dir, 'queue'),
    });
  }

  async stopQueue(): Promise<void> {
    await this.queue?.stop();
    this.queue = undefined;
  }

  /** The hosts' agents, polling, each apply taking `applyMs()`; every report noted in the ledger. */
  startAgents(applyMs: () => number): void {
    this.agents = startAgents({
      api: this.apiUrl,
      nodes: this.keys,
      intervalMs: this.options.intervalMs,
      heartbeatMs: this.options.heartbeatMs,
      maxBackoffMs: 5_000,
      applyMs,
      requests: (node, key) => this.ledger.wrap(node, hostApiClient(this.apiUrl, key)),
    });
  }

  async stopAgents(): Promise<void> {
    await this.agents?.stop();
    this.agents = undefined;
  }

  /** Gives every named node a new module, so each is behind. */
  async markBehind(nodes: readonly string[], module: string): Promise<void> {
    for (const node of nodes) await this.operator('PUT', `/nodes/${node}/modules/${module}`, {});
  }

  /** How many nodes are marked behind now (a strongly consistent count of `mesh#marked`). */
  async markedCount(): Promise<number> {
    const client = makeDynamoDBClient(this.located());
    try {
      const answer = await client.send(
        new QueryCommand({
          TableName: this.names.inventoryTable,
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': { S: markedPartition } },
          Select: 'COUNT',
          ConsistentRead: true,
        }),
      );
      return answer.Count ?? 0;
    } finally {
      client.destroy();
    }
  }

  /** Runs `mesh ARGS --json` against the control plane to its end. */
  async mesh(...args: string[]): Promise<{ code: number | null; json: unknown; output: string }> {
    const run = this.options.processes.spawn(
      `mesh ${args.join(' ')}`,
      [join(root, 'bin/mesh.ts'), '--api', this.apiUrl, '--json', ...args],
      process.env,
    );
    const { code } = await run.exited();
    const output = run.output();
    return { code, json: printedJson(output), output };
  }

  /** Spawns `mesh ARGS --json` and leaves it running. */
  meshRunning(...args: string[]): Watched {
    return this.options.processes.spawn(
      `mesh ${args.join(' ')}`,
      [join(root, 'bin/mesh.ts'), '--api', this.apiUrl, '--json', ...args],
      process.env,
    );
  }

  async operator(method: string, path: string, body?: unknown): Promise<unknown> {
    const answer = await fetch(`${this.apiUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await answer.text();
    if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${text}`);
    return text ? JSON.parse(text) : undefined;
  }

  /** Messages on the control queue, visible or in flight. */
  async queueDepth(): Promise<number> {
    const sqs = makeSQSClient(this.located());
    try {
      const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: this.names.controlQueue }));
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return (
        Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
      );
    } finally {
      sqs.destroy();
    }
  }

  /**
   * Waits until the control queue is empty (what a killed batch left in flight comes back after
   * the queue's visibility timeout), up to `timeoutMs`; answers how long it took.
   */
  async settle(timeoutMs: number): Promise<number> {
    const started = Date.now();
    while (Date.now() - started < timeoutMs) {
      if ((await this.queueDepth().catch(() => 1)) === 0) break;
      await new Promise((done) => setTimeout(done, 1_000));
    }
    await new Promise((done) => setTimeout(done, 1_000));
    return Date.now() - started;
  }

  /** This scenario's reports, accounted for from the consumer's lines, the dead letters and the store. */
  async account(): Promise<Accounting & { storeDisagrees: string[] }> {
    // One set across the runs: a message a killed run settled and the next run settles again is seen twice.
    const settled = new Set<string>();
    for (const run of this.runs) readConsumerLines(run.output(), this.evidence, settled);
    await this.drainDeadLetters();
    const result = account(this.ledger, this.evidence);
    return { ...result, storeDisagrees: await this.storeDisagreements() };
  }

  private async drainDeadLetters(): Promise<void> {
    const sqs = makeSQSClient(this.located());
    try {
      const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: this.names.deadLetterQueue }));
      for (;;) {
        const { Messages = [] } = await sqs.send(
          new ReceiveMessageCommand({
            QueueUrl,
            MaxNumberOfMessages: 10,
            MessageAttributeNames: ['All'],
            WaitTimeSeconds: 0,
          }),
        );
        if (Messages.length === 0) return;
        for (const message of Messages) {
          const id = message.MessageAttributes?.['mesh.messageId']?.StringValue;
          const kind = message.MessageAttributes?.['mesh.deadLetter']?.StringValue ?? 'unknown';
          const body = JSON.parse(message.Body ?? '{}') as { body?: { node?: string; sequence?: number } };
          if (id && body.body?.node)
            this.evidence.deadLetters.set(id, {
              key: reportKey(body.body.node, body.body.sequence ?? -1),
              kind,
            });
        }
        await sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl,
            Entries: Messages.map((message, index) => ({
              Id: String(index),
              ReceiptHandle: message.ReceiptHandle,
            })),
          }),
        );
      }
    } finally {
      sqs.destroy();
    }
  }

  /** Nodes whose stored report is not the highest one the consumer said it recorded. */
  private async storeDisagreements(): Promise<string[]> {
    const client = makeDynamoDBClient(this.located());
    const disagree: string[] = [];
    try {
      for (const [node, highest] of this.evidence.highestRecorded) {
        const { pk, sk } = reportItemKey(node);
        const { Item } = await client.send(
          new GetItemCommand({
            TableName: this.names.inventoryTable,
            Key: { pk: { S: pk }, sk: { S: sk } },
            ConsistentRead: true,
          }),
        );
        const stored = Number(Item?.sequence?.N ?? -1);
        if (stored !== highest) disagree.push(`${node}: stored ${stored}, recorded ${highest}`);
      }
    } finally {
      client.destroy();
    }
    return disagree;
  }

  async stop(): Promise<void> {
    await this.stopAgents();
    for (const run of this.runs)
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGTERM');
        await run.exited();
      }
    await this.stopQueue();
  }
}
