import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateTableCommand,
  DynamoDBClient,
  ListTablesCommand,
  waitUntilTableExists,
} from '@aws-sdk/client-dynamodb';
import { type RunningDynamoDBLocal, startDynamoDBLocal } from '../../lib/local/dynamodb-local.ts';
import { createTableInput } from '../../lib/local/provision.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import type { NodeKeyStore } from '../../lib/server/core/enrolment/ports.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { identityTable, inventoryTable, localResourceNames } from '../../lib/server/setup/resources.ts';

/**
 * A DynamoDB Local of its own, on disk, that a test really stops between two writes and starts
 * again on the same port and data, as a store outage would look to the control plane.
 */
export class StoppableStore {
  #store: RunningDynamoDBLocal;
  readonly #port: number;
  readonly #dataDir: string;

  private constructor(store: RunningDynamoDBLocal, port: number, dataDir: string) {
    this.#store = store;
    this.#port = port;
    this.#dataDir = dataDir;
  }

  static async start(name: string): Promise<StoppableStore> {
    const dataDir = mkdtempSync(join(tmpdir(), `mesh-${name}-`));
    const port = await freePort();
    const store = new StoppableStore(
      await startDynamoDBLocal({ port, dataDir, quickStart: true }),
      port,
      dataDir,
    );
    await store.#warm();
    return store;
  }

  /** Both tables under `prefix`, and a client that tries once, so an outage shows at once. */
  async tables(prefix: string): Promise<{ client: DynamoDBClient; config: MeshConfig }> {
    const names = localResourceNames(prefix);
    const client = makeDynamoDBClient(
      { region: 'us-east-1' },
      { endpoint: this.#store.endpoint, maxAttempts: 1 },
    );
    // Creating a table on disk can outlast the control plane's request timeout on a loaded machine.
    const patient = new DynamoDBClient({
      region: 'us-east-1',
      endpoint: this.#store.endpoint,
      credentials: { accessKeyId: 'meshlocal', secretAccessKey: 'meshlocal' },
    });
    try {
      for (const [table, name] of [
        [inventoryTable, names.inventoryTable],
        [identityTable, names.identityTable],
      ] as const) {
        await patient.send(new CreateTableCommand(createTableInput(table, name)));
        await waitUntilTableExists({ client: patient, maxWaitTime: 30 }, { TableName: name });
      }
    } finally {
      patient.destroy();
    }
    const config = {
      region: 'us-east-1',
      inventoryTable: names.inventoryTable,
      identityTable: names.identityTable,
    } as MeshConfig;
    return { client, config };
  }

  stop(): Promise<void> {
    return this.#store.stop();
  }

  /** Starts it again on its port and data, as it was when stopped. */
  async restart(): Promise<void> {
    this.#store = await startDynamoDBLocal({ port: this.#port, dataDir: this.#dataDir, quickStart: true });
    await this.#warm();
  }

  /**
   * A store that has just started answers its first requests slowly (a cold JVM, on a loaded
   * machine several seconds): it is up, and an outage a test stages is over, when the store
   * answers within the control plane's short request timeout, not when its port opens.
   */
  async #warm(): Promise<void> {
    const client = makeDynamoDBClient(
      { region: 'us-east-1' },
      { endpoint: this.#store.endpoint, maxAttempts: 1 },
    );
    try {
      for (let attempt = 0, quick = 0; quick < 3 && attempt < 30; attempt += 1) {
        const started = performance.now();
        const answered = await client.send(new ListTablesCommand({})).then(
          () => true,
          () => false,
        );
        quick = answered && performance.now() - started < 500 ? quick + 1 : 0;
      }
    } finally {
      client.destroy();
    }
  }

  async remove(): Promise<void> {
    await this.#store.stop();
    rmSync(this.#dataDir, { recursive: true, force: true });
  }
}

/**
 * A node key store that runs `afterWrite` once, right after its first key write (while `armed`):
 * the moment between an enrolment's or a rotation's writes.
 */
export class KeysThenFault implements NodeKeyStore {
  armed = true;
  readonly #inner: NodeKeyStore;
  readonly #afterWrite: () => Promise<void>;

  constructor(inner: NodeKeyStore, afterWrite: () => Promise<void>) {
    this.#inner = inner;
    this.#afterWrite = afterWrite;
  }

  async putKeys(record: Parameters<NodeKeyStore['putKeys']>[0]): Promise<void> {
    await this.#inner.putKeys(record);
    if (this.armed) {
      this.armed = false;
      await this.#afterWrite();
    }
  }

  pruneOtherKeys(...args: Parameters<NodeKeyStore['pruneOtherKeys']>) {
    return this.#inner.pruneOtherKeys(...args);
  }
}
