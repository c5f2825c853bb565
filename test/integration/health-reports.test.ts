import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../lib/clients/http/api-client.ts';
import { type RunningApi, startLocalApi } from '../../lib/local/http-server.ts';
import { localPartsFor } from '../../lib/local/parts.ts';
import { makeDynamoDBClient } from '../../lib/server/adapters/aws-clients.ts';
import { documentClient } from '../../lib/server/adapters/dynamodb/requests.ts';
import { DynamoDBRolloutFacts } from '../../lib/server/adapters/rollout/rollout-facts.ts';
import type { AuditRecord } from '../../lib/server/core/audit/record.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import { StaleReportError } from '../../lib/server/core/control/errors.ts';
import type { ReportBody } from '../../lib/server/core/control/messages.ts';
import type { Summary } from '../../lib/server/core/summary/summary.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import type { NodeDetails } from '../../lib/server/core/views/views.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { RecordingLog } from '../support/control-fakes.ts';
import { runMesh } from '../support/processes.ts';
import { provisionTestResources } from '../support/resources.ts';

/**
 * Health and reverts as the report store records them (lib/server/adapters/control/report-store.ts,
 * health-items.ts) on DynamoDB Local, and as the views, the summary, the audit trail and the CLI
 * show them.
 */
let config: MeshConfig;
let parts: Parts;
let api: RunningApi;
let client: ApiClient;
const dynamodb = makeDynamoDBClient({ region: process.env.AWS_REGION ?? 'us-east-1' });

beforeAll(async () => {
  config = await provisionTestResources('health');
  parts = localPartsFor(config, { overrides: { log: new RecordingLog() }, flowRetryIntervalMs: 0 });
  api = await startLocalApi({ port: 0, parts });
  client = new ApiClient(api.url);
});

afterAll(async () => {
  await api?.stop();
  dynamodb.destroy();
});

/** A node with one module, sent `revisions` revisions (each push after a new module). */
async function sentNode(node: string, revisions = 1) {
  await parts.meshService.addNode(node, {}, localActor());
  for (let revision = 1; revision <= revisions; revision += 1) {
    await parts.meshService.assign(node, `m${revision}`, null, localActor());
    await parts.pushFlow.push({ node });
  }
}

let heard = Date.parse('2026-11-01T10:00:00.000Z');
/** Records a report as the consumer does, each heard a second after the one before. */
async function record(node: string, report: Omit<ReportBody, 'node' | 'sentAt'>, by = localActor()) {
  heard += 1000;
  const heardAt = new Date(heard).toISOString();
  await parts.reports.recordReport(
    { node, sentAt: heardAt, ...report },
    { heardAt, queuedAt: new Date().toISOString() },
    by,
  );
  return heardAt;
}

const status = async (query: string) =>
  (await client.call<{ nodes: NodeStatus[] }>('GET', `/status?${query}`)).nodes;
const healthItem = async (node: string) =>
  (
    await documentClient(dynamodb).send(
      new GetCommand({
        TableName: config.inventoryTable,
        Key: { pk: `node#${node}`, sk: 'health' },
        ConsistentRead: true,
      }),
    )
  ).Item;

describe('health as the report store keeps it', () => {
  it('is written with each report that carries it, since when kept while the state holds; a stale report writes nothing', async () => {
    const node = 'health-a';
    await sentNode(node);
    const checking = { state: 'unknown' as const, check: true, revision: 1 };
    const healthy = { ...checking, state: 'healthy' as const, checkedAt: '2026-11-01T10:00:05.000Z' };
    const unhealthy = { ...healthy, state: 'unhealthy' as const, reason: 'curl: (7) Failed to connect' };

    await record(node, { sequence: 10, state: 'applied', revision: 1, health: checking });
    const checkingShown = (await status(`prefix=${node}`))[0]?.health;
    const healthySince = await record(node, {
      sequence: 11,
      state: 'heartbeat',
      revision: 1,
      health: healthy,
      output: { check: 'HTTP/1.1 200 OK' },
    });
    await record(node, { sequence: 12, state: 'heartbeat', revision: 1, health: healthy });
    const healthyShown = (await status(`prefix=${node}`))[0]?.health;
    const unhealthySince = await record(node, {
      sequence: 13,
      state: 'heartbeat',
      revision: 1,
      health: unhealthy,
      output: { apply: 'restarted web\n', check: 'curl: (7) Failed to connect\n' },
    });
    const stale = record(node, { sequence: 12, state: 'heartbeat', revision: 1, health: healthy });
    await expect(stale).rejects.toBeInstanceOf(StaleReportError);
    const listed = await status('unhealthy=true');
    const details = await client.call<NodeDetails>('GET', `/nodes/${node}`);

    expect(checkingShown).toMatchObject({ state: 'unknown', check: true, revision: 1 });
    expect(healthyShown).toEqual({
      state: 'healthy',
      check: true,
      revision: 1,
      since: healthySince,
      checkedAt: healthy.checkedAt,
      reason: null,
    });
    expect(listed.map((n) => n.node)).toEqual([node]);
    expect(listed[0]?.health).toMatchObject({
      state: 'unhealthy',
      since: unhealthySince,
      reason: unhealthy.reason,
    });
    expect(details.output).toEqual({ apply: 'restarted web\n', check: 'curl: (7) Failed to connect\n' });
    const item = await healthItem(node);
    expect(item).toMatchObject({ gsi2pk: 'view#unhealthy', gsi2sk: node, unhealthySince });
    expect(item).not.toHaveProperty('healthySince');

    // Healthy again: off the list. An applied report without health (a host from before): no health known.
    await record(node, { sequence: 14, state: 'heartbeat', revision: 1, health: healthy });
    expect((await status('unhealthy=true')).map((n) => n.node)).not.toContain(node);
    expect(await healthItem(node)).not.toHaveProperty('gsi2pk');
    expect(await healthItem(node)).not.toHaveProperty('checkOutput');
    await record(node, { sequence: 15, state: 'applied', revision: 1 });
    expect(await healthItem(node)).toBeUndefined();
    expect((await status(`prefix=${node}`))[0]).not.toHaveProperty('health');
  });

  it('is counted in the summary: healthy, unhealthy, and every other node unknown', async () => {
    await sentNode('health-b');
    await sentNode('health-c');
    await sentNode('health-d');
    const health = (state: 'healthy' | 'unhealthy') => ({ state, check: true, revision: 1 });
    await record('health-b', { sequence: 1, state: 'applied', revision: 1, health: health('healthy') });
    await record('health-c', { sequence: 1, state: 'applied', revision: 1, health: health('unhealthy') });

    const summary = await client.call<Summary>('POST', '/summary/rebuild');
    const everyNode = (await status('limit=1000')).length;

    expect(summary.health.healthy).toBeGreaterThanOrEqual(1);
    expect(summary.health.unhealthy).toBeGreaterThanOrEqual(1);
    expect(summary.health.healthy + summary.health.unhealthy + summary.health.unknown).toBe(everyNode);
    const shown = await status('limit=1000');
    expect(summary.health.unhealthy).toBe(shown.filter((n) => n.health?.state === 'unhealthy').length);
    expect(summary.health.healthy).toBe(shown.filter((n) => n.health?.state === 'healthy').length);
  });
});

describe('GET /status?unhealthy=true', () => {
  it('walks the unhealthy list a page at a time: every unhealthy node once, in name order, no other', async () => {
    const nodes = Array.from({ length: 10 }, (_, i) => `page-${String(i).padStart(2, '0')}`);
    for (const node of nodes) await sentNode(node);
    const sick = nodes.filter((_, i) => i % 3 !== 1);
    for (const node of nodes)
      await record(node, {
        sequence: 1,
        state: 'applied',
        revision: 1,
        health: { state: sick.includes(node) ? 'unhealthy' : 'healthy', check: true, revision: 1 },
      });

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const query = new URLSearchParams({
        unhealthy: 'true',
        prefix: 'page-',
        limit: '3',
        ...(cursor ? { cursor } : {}),
      });
      const page = await client.call<{ nodes: NodeStatus[]; next?: string }>('GET', `/status?${query}`);
      seen.push(...page.nodes.map((n) => n.node));
      cursor = page.next;
      pages += 1;
    } while (cursor);

    expect(seen).toEqual(sick);
    expect(pages).toBeGreaterThanOrEqual(3);
  });
});

describe('a revert as the report store keeps it', () => {
  it('moves the applied revision back to the one applied again, is audited with the key that sent it, and shows until the host moves on', async () => {
    const node = 'revert-a';
    await sentNode(node, 3);
    const health = (revision: number, state: 'healthy' | 'unhealthy' | 'unknown') => ({
      state,
      check: true,
      revision,
    });
    await record(node, {
      sequence: 1,
      state: 'applied',
      revision: 2,
      modules: { m1: null, m2: null },
      health: health(2, 'healthy'),
    });
    await record(node, { sequence: 2, state: 'applied', revision: 3, health: health(3, 'unknown') });
    const at = await record(
      node,
      {
        sequence: 3,
        state: 'failed',
        revision: 3,
        step: 'unhealthy: curl: (7) Failed to connect',
        modules: { m1: null, m2: null, m3: null },
        health: health(2, 'unknown'),
        revert: { to: 2, cause: 'unhealthy', ok: true, modules: { m1: null, m2: null } },
      },
      { principal: 'key:thumb', source: '127.0.0.1', requestId: 'r-1' },
    );
    const reverted = (await status(`prefix=${node}`))[0];
    const trail = (
      await client.call<{ records: AuditRecord[] }>('GET', `/audit?node=${node}&action=node.revert`)
    ).records;
    const printed = await runMesh(api.url, ['node', 'show', node]);
    const listed = await runMesh(api.url, ['status', '--failed']);

    expect(reverted).toMatchObject({
      appliedRevision: 2,
      appliedAt: at,
      reportState: 'failed',
      revert: { from: 3, to: 2, cause: 'unhealthy', ok: true, at },
    });
    expect(trail).toEqual([
      expect.objectContaining({
        action: 'node.revert',
        principal: 'key:thumb',
        target: `node:${node}`,
        outcome: 'done',
        details: { from: 3, to: 2, cause: 'unhealthy', step: 'unhealthy: curl: (7) Failed to connect' },
      }),
    ]);
    expect(printed.stdout).toContain(
      'revision 3 given up for 2, the last applied and healthy: its check did not pass',
    );
    expect(listed.stdout).toMatch(
      new RegExp(`${node} .*applied 2 \\(failed\\)  reverted 3 -> 2 \\(unhealthy\\)`),
    );

    await record(node, { sequence: 4, state: 'applying', revision: 3, health: health(2, 'healthy') });
    expect((await status(`prefix=${node}`))[0]).not.toHaveProperty('revert');
  });
});

describe('the CLI', () => {
  it('mesh status --unhealthy lists the unhealthy nodes with why; node show prints health and the outputs; the summary counts them', async () => {
    const node = 'health-cli';
    await sentNode(node);
    await record(node, {
      sequence: 1,
      state: 'applied',
      revision: 1,
      health: { state: 'unhealthy', check: true, revision: 1, reason: 'port 80: connection refused' },
      output: { apply: 'reloaded nginx', check: 'port 80: connection refused\nexit 2' },
    });

    const unhealthy = await runMesh(api.url, ['status', '--unhealthy']);
    const json = await runMesh(api.url, ['status', '--unhealthy', '--json']);
    const shown = await runMesh(api.url, ['node', 'show', node]);
    const summary = await runMesh(api.url, ['status', '--summary']);

    expect(unhealthy.code).toBe(0);
    const lines = unhealthy.stdout.trim().split('\n');
    expect(lines.filter((line) => line.startsWith(node))).toEqual([
      expect.stringContaining('UNHEALTHY: port 80: connection refused'),
    ]);
    expect(lines.every((line) => line.includes('UNHEALTHY'))).toBe(true);
    expect(
      (JSON.parse(json.stdout) as { nodes: NodeStatus[] }).nodes.map((n) => n.health?.state),
    ).not.toContain('healthy');
    expect(shown.stdout).toMatch(/health\s+UNHEALTHY: port 80: connection refused \(revision 1, since /);
    expect(shown.stdout).toContain('check output (its end):\n');
    expect(shown.stdout).toMatch(/ {16}port 80: connection refused\n {16}exit 2/);
    expect(summary.stdout).toMatch(/healthy \d+ {2}unhealthy [1-9]\d* {2}health unknown \d+/);
    expect(summary.stdout).toContain('unhealthy; mesh status --unhealthy shows which');
  });
});

describe('what a rollout learns of health (rollout-facts.ts)', () => {
  it('each asked node its health beside its report; beside them, the unhealthy nodes a rollout holds, with the rollout and wave', async () => {
    await sentNode('facts-a');
    await sentNode('facts-b');
    await sentNode('facts-c');
    const checking = { state: 'unknown' as const, check: true, revision: 1 };
    const unhealthy = { state: 'unhealthy' as const, check: true, revision: 1, reason: 'down' };
    await record('facts-a', { sequence: 1, state: 'applied', revision: 1, health: checking });
    const since = await record('facts-b', { sequence: 1, state: 'applied', revision: 1, health: unhealthy });
    await record('facts-c', { sequence: 1, state: 'applied', revision: 1, health: unhealthy });
    await documentClient(dynamodb).send(
      new PutCommand({
        TableName: config.inventoryTable,
        Item: { pk: 'rollout-claim#facts-b', sk: 'claim', rollout: 'r-facts', wave: 0, claimedAt: since },
      }),
    );

    const facts = await new DynamoDBRolloutFacts({
      client: documentClient(dynamodb),
      tableName: config.inventoryTable,
    }).of(['facts-a']);

    expect(facts.get('facts-a')).toMatchObject({
      report: { revision: 1, state: 'applied' },
      health: { state: 'unknown', check: true, revision: 1 },
    });
    expect(facts.get('facts-b')).toEqual({
      health: { state: 'unhealthy', check: true, revision: 1, reason: 'down', unhealthySince: since },
      heldBy: { rollout: 'r-facts', wave: 0 },
    });
    // Unhealthy, but no rollout holds it: nothing a rollout would count.
    expect(facts.has('facts-c')).toBe(false);
  });
});
