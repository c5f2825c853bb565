import { describe, expect, inject, it } from 'vitest';
import { ExitCode } from '../../lib/clients/common/exit-codes.ts';
import { type RunningLocalRuntime, startLocalRuntime } from '../../lib/local/local-runtime.ts';
import { claimPartition } from '../../lib/server/adapters/rollout/rollout-claims.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { RolloutAnswer as RolloutRecord } from '../../lib/server/core/rollout/pages.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';
import { runMesh } from '../support/processes.ts';
import { tableContents } from '../support/table-contents.ts';

/**
 * A rollout outlives the process that drives it (docs/decisions/rollouts-in-waves.md): a local
 * runtime stopped after a rollout's first wave went out, started again over the same store,
 * finds the rollout by its record and takes it on to its end, with no request asking it to.
 */
const nodes = ['ra', 'rb', 'rc'];

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const rolloutOf = async (runtime: RunningLocalRuntime, id: string) =>
  (await (await fetch(`${runtime.url}/rollouts/${id}`)).json()) as RolloutRecord;

async function applied(runtime: RunningLocalRuntime, record: RolloutRecord, wave: number, sequence: number) {
  const at = new Date().toISOString();
  for (const n of record.waves[wave]?.nodes ?? [])
    await runtime.parts.reports.recordReport(
      { node: n.node, sequence, state: 'applied', revision: n.revision ?? 0, sentAt: at },
      { heardAt: at, queuedAt: at },
    );
}

describe('a rollout across a restart of the local runtime', () => {
  it('is taken on by the next start from its record, wave after wave, to done', async () => {
    const endpoints = inject('endpoints');
    const start = (prefix: string) =>
      startLocalRuntime({ port: 0, mqttPort: 0, given: endpoints, resourcePrefix: prefix });
    const prefix = `rollout-${Date.now()}`;
    const first = await start(prefix);
    let id: string;
    try {
      // enrolled: a node that never enrolled is skipped by a wave, with no host to answer for it
      for (const node of nodes) {
        await addEnrolledNode(first.parts, node);
        await first.parts.meshService.assign(node, 'web', null, localActor());
      }
      const started = await fetch(`${first.url}/rollouts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ behind: true, waves: '1,100%' }),
      });
      expect(started.status).toBe(201);
      const answer = (await started.json()) as RolloutRecord;
      // answered before its nodes are claimed: the driver claims them, then sends wave 1
      expect(answer).toMatchObject({ state: 'claiming', claims: { claimed: 0, total: 3 } });
      id = answer.id;
      const sent = await until('the first wave', async () => {
        const record = await rolloutOf(first, id);
        return record.current === 0 ? record : undefined;
      });
      expect(sent.waves.map((w) => w.nodes.map((n) => n.state))).toEqual([
        ['waiting'],
        ['pending', 'pending'],
      ]);
    } finally {
      await first.stop();
    }

    const second = await start(prefix);
    try {
      const waiting = await rolloutOf(second, id);
      expect(waiting).toMatchObject({ state: 'running', current: 0 });
      await applied(second, waiting, 0, 1);
      const next = await until('the second wave, sent by the new runtime', async () => {
        const record = await rolloutOf(second, id);
        return record.current === 1 ? record : undefined;
      });
      await applied(second, next, 1, 1);
      const done = await until('the rollout done', async () => {
        const record = await rolloutOf(second, id);
        return record.state === 'done' ? record : undefined;
      });
      expect(done.waves.flatMap((w) => w.nodes.map((n) => `${n.node} ${n.state}`)).sort()).toEqual(
        nodes.map((node) => `${node} applied`),
      );
    } finally {
      await second.stop();
    }
  });

  it('a push in waves over nodes a running rollout holds: mesh says how far its claims came, exits refused (rollout_overlap), and the refused rollout holds nothing', async () => {
    const endpoints = inject('endpoints');
    const runtime = await startLocalRuntime({
      port: 0,
      mqttPort: 0,
      given: endpoints,
      resourcePrefix: `overlap-${Date.now()}`,
    });
    try {
      // enrolled, so the holder waits for their reports: a wave skips a node that never enrolled
      for (const node of ['oa', 'ob', 'oc']) {
        await addEnrolledNode(runtime.parts, node);
        await runtime.parts.meshService.assign(node, 'web', null, localActor());
      }
      const held = await runMesh(runtime.url, [
        '--json',
        'push',
        '--behind',
        '--waves',
        '1,100%',
        '--no-wait',
      ]);
      expect(held.code, held.output).toBe(ExitCode.ok);
      const holder = JSON.parse(held.stdout) as RolloutRecord;
      expect(holder).toMatchObject({ state: 'running' });
      expect(held.output).toContain('rollout.claiming');

      const refused = await runMesh(runtime.url, ['--json', 'push', 'oa', '--waves', '1,100%']);
      expect(refused.code, refused.output).toBe(ExitCode.refused);
      const { error } = JSON.parse(refused.stdout) as {
        error: { code: string; message: string; status: number };
      };
      expect(error).toMatchObject({ code: 'rollout_overlap', status: 409 });
      expect(error.message).toContain(`held by rollout ${holder.id}`);

      const listed = (await (await fetch(`${runtime.url}/rollouts`)).json()) as {
        rollouts: Array<{ id: string; state: string }>;
      };
      const loser = listed.rollouts.find((r) => r.id !== holder.id);
      expect(loser).toMatchObject({ state: 'refused' });
      await until('the refused rollout to let go of its claims', async () => {
        const record = await rolloutOf(runtime, loser?.id ?? '');
        return record.releasing && record.releasing.released === record.releasing.upto ? record : undefined;
      });
      const { config } = runtime.parts;
      const items = (await tableContents(config))[config.inventoryTable] as Array<Record<string, unknown>>;
      const claims = items.filter((item) => String(item.pk).startsWith(claimPartition('')));
      expect(claims.map((item) => item.rollout)).toEqual([holder.id, holder.id, holder.id]);
    } finally {
      await runtime.stop();
    }
  });
});
