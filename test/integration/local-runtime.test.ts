import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { startLocalRuntime } from '../../lib/local/local-runtime.ts';
import { runtimeLines } from '../../lib/local/log-lines.ts';
import { freePort } from '../../lib/local/tcp-ports.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { isAlive, watch } from '../support/processes.ts';

const withoutEndpoints = () => {
  const env = { ...process.env };
  delete env.AWS_ENDPOINT_URL;
  delete env.AWS_ENDPOINT_URL_DYNAMODB;
  delete env.AWS_ENDPOINT_URL_SQS;
  return env;
};

/** DynamoDB Local processes keeping their data under `dataDir`: this test's, whatever else runs. */
function dynamodbLocalPids(dataDir: string): number[] {
  try {
    return execFileSync('pgrep', ['-f', `DynamoDBLocal.jar.*${dataDir}`], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

const startupMs = 90_000;

describe('npm start: the local runtime as a real process', () => {
  it(
    'serves /health, stops every child on SIGINT, and a second start finds the data of the first',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'mesh-data-'));
      const port = await freePort();
      const env = {
        ...withoutEndpoints(),
        MESH_PORT: String(port),
        MESH_MQTT_PORT: '0',
        MESH_DATA: dataDir,
        MESH_LOG_FORMAT: 'json',
      };

      const first = watch(process.execPath, ['bin/local.ts'], { env });
      // Starting a JVM takes seconds on an idle machine, and far longer while the rest of the run
      // shares its cores: what is held here is what happens once it is up, not how fast it comes.
      const { dynamodb: dynamodbEndpoint } = await first.waitForCode(runtimeLines.stores, {
        timeoutMs: startupMs,
      });
      await first.waitForCode(runtimeLines.ready, { timeoutMs: startupMs });
      const health = await fetch(`http://127.0.0.1:${port}/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok', service: 'mesh' });

      const store = makeDynamoDBClient({ region: 'us-east-1' }, { endpoint: dynamodbEndpoint });
      await store.send(
        new PutItemCommand({ TableName: 'mesh-inventory', Item: { pk: { S: 'kept' }, sk: { S: 'kept' } } }),
      );
      store.destroy();
      const ours = dynamodbLocalPids(dataDir);
      expect(ours.length).toBe(1);

      first.child.kill('SIGINT');
      expect((await first.exited()).code).toBe(0);
      expect(ours.filter(isAlive)).toEqual([]);

      const second = watch(process.execPath, ['bin/local.ts'], { env });
      const { dynamodb: secondEndpoint } = await second.waitForCode(runtimeLines.stores, {
        timeoutMs: startupMs,
      });
      const again = makeDynamoDBClient({ region: 'us-east-1' }, { endpoint: secondEndpoint });
      const kept = await again.send(
        new GetItemCommand({ TableName: 'mesh-inventory', Key: { pk: { S: 'kept' }, sk: { S: 'kept' } } }),
      );
      again.destroy();
      second.child.kill('SIGTERM');
      expect((await second.exited()).code).toBe(0);
      expect(kept.Item?.pk?.S).toBe('kept');
    },
    4 * startupMs,
  );

  it('says in one line that the port is taken, with no stack trace', async () => {
    const port = await freePort();
    const holder = (await import('node:net')).createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', () => resolve()));
    try {
      const run = watch(process.execPath, ['bin/local.ts'], {
        env: { ...withoutEndpoints(), MESH_PORT: String(port), MESH_MQTT_PORT: '0' },
      });
      const { code } = await run.exited();
      expect(code).toBe(1);
      expect(run.output().trim()).toBe(
        `mesh: port ${port} is already in use: stop what holds it, or choose another port with MESH_PORT`,
      );
    } finally {
      holder.close();
    }
  });
});

describe('the local runtime in this process', () => {
  it('hands the wiring its emulators through configuration, writing nothing to the environment', async () => {
    const endpoints = inject('endpoints');
    const before = { ...process.env };

    const runtime = await startLocalRuntime({
      port: 0,
      mqttPort: 0,
      given: endpoints,
      resourcePrefix: `env-${Date.now()}`,
    });
    try {
      const answer = await fetch(`${runtime.url}/nodes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"node":"env-check"}',
      });
      expect(answer.status).toBe(201);
    } finally {
      await runtime.stop();
    }

    expect(runtime.config.endpoints).toEqual(endpoints);
    expect(process.env).toEqual(before);
  });
});
