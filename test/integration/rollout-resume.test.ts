import { describe, expect, inject, it } from 'vitest';
import { localActor } from '../../lib/core/audit/record.ts';
import type { RolloutAnswer as RolloutRecord } from '../../lib/core/rollout/pages.ts';
import { type RunningLocalRuntime, startLocalRuntime } from '../../lib/runtime/local-runtime.ts';

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
      for (const node of nodes) {
        await first.parts.meshService.addNode(node, {}, localActor());
        await first.parts.meshService.assign(node, 'web', null, localActor());
      }
      const started = await fetch(`${first.url}/rollouts`, {
        method: 'POST',
        body: JSON.stringify({ behind: true, waves: '1,100%' }),
      });
      expect(started.status).toBe(201);
      id = ((await started.json()) as RolloutRecord).id;
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
});
