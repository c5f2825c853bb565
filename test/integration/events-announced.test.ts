import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeys } from '../../lib/clients/host/keys.ts';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { type LocalParts, localPartsFor } from '../../lib/local/parts.ts';
import { recordSk } from '../../lib/server/adapters/audit/audit-trail.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { StaleReportError } from '../../lib/server/core/control/errors.ts';
import type { ReportBody } from '../../lib/server/core/control/messages.ts';
import { envelope } from '../../lib/server/core/control/messages.ts';
import { settleMessage } from '../../lib/server/core/control/settle.ts';
import { issueToken } from '../../lib/server/core/enrolment/tokens.ts';
import type { EventSink, MeshEvent } from '../../lib/server/core/events/events.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { addEnrolledNode, enrolNode, openedBy, relate, secretsOf } from '../support/enrolled-nodes.ts';
import { provisionTestResources } from '../support/resources.ts';

/** A sink that keeps what it is told, as the wiring hands it every part. */
class RecordingSink implements EventSink {
  readonly told: MeshEvent[] = [];
  async publish(events: readonly MeshEvent[]) {
    this.told.push(...events);
  }
}

/**
 * The events told where their change commits, through the wiring's real stores on DynamoDB Local:
 * each once, none for a change refused, and no secret in any detail.
 */
let config: MeshConfig;
let parts: LocalParts;
let api: RunningApi;
let client: ApiClient;
const sink = new RecordingSink();
const dynamodb = makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' });
const told = (type: MeshEvent['type']) => sink.told.filter((event) => event.type === type);

beforeAll(async () => {
  config = await provisionTestResources('events-told');
  parts = localPartsFor(config, { overrides: { log: new RecordingLog(), events: sink } });
  api = await startLocalApi({ port: 0, parts });
  client = new ApiClient(api.url);
});

afterAll(async () => {
  await api?.stop();
  dynamodb.destroy();
});

describe('events told where their change commits', () => {
  it('tells node.unhealthy for the report that turned a node unhealthy, once, and not for a stale one', async () => {
    await parts.meshService.addNode('ev-db', {}, localActor());
    await parts.meshService.assign('ev-db', 'postgres', null, localActor());
    await parts.pushFlow.push({ node: 'ev-db' });
    let heard = Date.parse('2026-12-06T01:00:00.000Z');
    const record = async (sequence: number, state: 'healthy' | 'unhealthy') => {
      heard += 1000;
      const heardAt = new Date(heard).toISOString();
      const report: ReportBody = {
        node: 'ev-db',
        sentAt: heardAt,
        sequence,
        state: 'applied',
        revision: 1,
        health: { state, check: true, revision: 1, checkedAt: heardAt },
      };
      await parts.reports.recordReport(report, { heardAt, queuedAt: new Date().toISOString() });
      return heardAt;
    };
    await record(1, 'healthy');
    const turned = await record(2, 'unhealthy');
    await record(3, 'unhealthy');
    await expect(record(3, 'unhealthy')).rejects.toThrow(StaleReportError);
    await record(4, 'healthy');
    // the next one comes through the control queue's settling, as every host's report does
    const settled = await settleMessage(
      envelope('report', {
        node: 'ev-db',
        sentAt: new Date().toISOString(),
        sequence: 5,
        state: 'applied',
        revision: 1,
        health: { state: 'unhealthy', check: true, revision: 1 },
      }),
      'm-ev-db-5',
      parts.consumer,
    );
    expect(settled).toContain('unhealthy');

    expect(told('node.unhealthy')).toEqual([
      { type: 'node.unhealthy', time: turned, detail: { node: 'ev-db', revision: 1 } },
      { type: 'node.unhealthy', time: expect.any(String), detail: { node: 'ev-db', revision: 1 } },
    ]);
    expect(Date.parse(told('node.unhealthy')[1]?.time ?? '')).toBeGreaterThan(Date.now() - 60_000);
  });

  it('tells node.enrolled once for an enrolment over HTTP, not for the host asking again, and not for a refused one', async () => {
    await parts.meshService.addNode('ev-host', {}, localActor());
    const { token } = await issueToken('ev-host', 3600, { tokens: parts.tokens }, localActor());
    const { keys } = await generateNodeKeys();
    const body = {
      node: 'ev-host',
      token,
      keys: { signing: keys.signing.publicJwk, sealing: keys.sealing.publicJwk },
    };
    const answer = await client.call<{ thumbprint: string }>('POST', '/enrol', body);
    await client.call('POST', '/enrol', body);
    const other = await generateNodeKeys();
    await expect(
      client.call('POST', '/enrol', {
        ...body,
        keys: { signing: other.keys.signing.publicJwk, sealing: other.keys.sealing.publicJwk },
      }),
    ).rejects.toThrow();

    expect(told('node.enrolled')).toEqual([
      {
        type: 'node.enrolled',
        time: expect.any(String),
        detail: { node: 'ev-host', thumbprint: answer.thumbprint },
      },
    ]);
    expect(JSON.stringify(told('node.enrolled'))).not.toContain(token);
  });

  it('tells audit.unverified for a verify that finds a record altered, and nothing while the trail is intact', async () => {
    await parts.auditReader.verify();
    expect(told('audit.unverified')).toEqual([]);
    await documentClient(dynamodb).send(
      new UpdateCommand({
        TableName: config.inventoryTable,
        Key: { pk: 'audit#node:ev-db', sk: recordSk(1) },
        UpdateExpression: 'SET outcome = :forged',
        ExpressionAttributeValues: { ':forged': 'refused' },
      }),
    );
    await parts.auditReader.verify();
    expect(told('audit.unverified')).toEqual([
      expect.objectContaining({
        detail: expect.objectContaining({ findings: 1, problems: ['altered'], subjects: ['node:ev-db'] }),
      }),
    ]);
  });

  it('holds no secret of a sealed relation, nor a token, in any detail, while the relation is minted and pushed', async () => {
    const web = await addEnrolledNode(parts, 'ev-web');
    await parts.meshService.addNode('ev-mq', {}, localActor());
    await relate(parts, { node: 'ev-web', module: 'app' }, { node: 'ev-mq', module: 'mq', kind: 'amqp' });
    await parts.pushFlow.push({ node: 'ev-web' });
    const mq = await enrolNode(parts, 'ev-mq');
    await settleMessage(envelope('enrolled', { node: 'ev-mq' }), 'm-ev-mq', parts.consumer);
    const [secret] = secretsOf(await openedBy(parts, 'ev-web', web));
    expect(secret).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(secretsOf(await openedBy(parts, 'ev-mq', mq))).toEqual([secret]);

    const details = JSON.stringify(sink.told.map((event) => event.detail));
    expect(told('push.completed').length).toBeGreaterThanOrEqual(2);
    expect(details).not.toContain(secret);
    expect(details).not.toMatch(/"(secret|token|sealed|declaration|privateKey)"/);
  });
});
