import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeEventBridgeClient } from '../../lib/server/adapters/aws-clients.ts';
import { EventBridgeEventSink } from '../../lib/server/adapters/events/eventbridge-sink.ts';
import { RecordingLog } from '../support/control-fakes.ts';

type Put = { readonly target: string | undefined; readonly body: { Entries: Record<string, unknown>[] } };

/**
 * The SDK's own endpoint settings reach the events' client: PutEvents goes to
 * AWS_ENDPOINT_URL_EVENTBRIDGE (LocalStack's, or here a loopback receiver answering as EventBridge).
 */
describe('events put through the endpoint AWS_ENDPOINT_URL_EVENTBRIDGE names', () => {
  const puts: Put[] = [];
  const server = createServer(async (request, response) => {
    let body = '';
    for await (const chunk of request) body += chunk;
    puts.push({ target: request.headers['x-amz-target'] as string | undefined, body: JSON.parse(body) });
    response.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
    response.end(JSON.stringify({ FailedEntryCount: 0, Entries: [{ EventId: 'one' }] }));
  });
  const saved = { ...process.env };
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    process.env.AWS_ENDPOINT_URL_EVENTBRIDGE = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    process.env.AWS_ACCESS_KEY_ID = 'meshlocal';
    process.env.AWS_SECRET_ACCESS_KEY = 'meshlocal';
  });
  afterAll(async () => {
    for (const name of ['AWS_ENDPOINT_URL_EVENTBRIDGE', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'])
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('puts the event there, on the bus named, from source mesh', async () => {
    const log = new RecordingLog();
    const sink = new EventBridgeEventSink({
      client: makeEventBridgeClient({ region: 'eu-west-1' }),
      busName: 'mesh-events',
      log,
    });
    await sink.publish([
      { type: 'rollout.halted', time: new Date().toISOString(), detail: { rollout: 'r1' } },
    ]);
    expect(puts).toEqual([
      {
        target: 'AWSEvents.PutEvents',
        body: {
          Entries: [
            expect.objectContaining({
              EventBusName: 'mesh-events',
              Source: 'mesh',
              DetailType: 'rollout.halted',
              Detail: '{"rollout":"r1"}',
            }),
          ],
        },
      },
    ]);
    expect(log.coded).toEqual([]);
  });
});
