import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IoTCustomAuthorizerResult } from 'aws-lambda';
import { connectAsync } from 'mqtt';
import { describe, expect, it } from 'vitest';
import { startEmbeddedBroker } from '../../lib/local/embedded-broker.ts';
import type { BrokerLifecycleHandler } from '../../lib/server/functions/spec.ts';
import { RecordingLog } from '../support/control-fakes.ts';

/** Lets every client connect as itself: the authorizer's own checks are signal-broker.test.ts's. */
const allowAll = async () =>
  ({
    isAuthenticated: true,
    principalId: 'test',
    disconnectAfterInSeconds: 3600,
    refreshAfterInSeconds: 3600,
    policyDocuments: [
      { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: 'iot:*', Resource: '*' }] },
    ],
  }) as unknown as IoTCustomAuthorizerResult;

describe('the embedded broker after a stop it never finished', () => {
  it('tells the presence function that every client connected then is disconnected, newer than its connect', async () => {
    const connectedFile = join(mkdtempSync(join(tmpdir(), 'mesh-broker-')), 'broker-connected.json');
    type Lifecycle = { clientId: string; eventType: string; versionNumber: number };
    const events: Lifecycle[] = [];
    const lifecycle = (async (event: Lifecycle) => {
      events.push(event);
    }) as unknown as BrokerLifecycleHandler;
    const options = {
      host: '127.0.0.1',
      port: 0,
      authorize: allowAll,
      lifecycle,
      scope: { partition: 'aws', region: 'us-east-1', accountId: '000000000000' },
      log: new RecordingLog(),
      connectedFile,
    };
    const first = await startEmbeddedBroker(options);
    const client = await connectAsync(first.url, {
      clientId: 'web-1',
      username: 'web-1',
      password: 'x',
      reconnectPeriod: 0,
    });
    // the file is written within a second of a change
    await expect.poll(() => readFileSync(connectedFile, 'utf8'), { timeout: 5_000 }).toContain('web-1');
    const connect = events.find((event) => event.eventType === 'connected');

    // the first broker is never stopped (as a killed npm start is not): a second starts on its file
    const second = await startEmbeddedBroker(options);
    const after = events.slice(events.indexOf(connect as Lifecycle) + 1);
    expect(after).toEqual([expect.objectContaining({ clientId: 'web-1', eventType: 'disconnected' })]);
    expect(after[0]?.versionNumber).toBeGreaterThan(connect?.versionNumber ?? Number.POSITIVE_INFINITY);

    await client.endAsync(true);
    await second.stop();
    await first.stop();
    expect(JSON.parse(readFileSync(connectedFile, 'utf8'))).toEqual([]);
  });
});
