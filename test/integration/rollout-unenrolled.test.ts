import { describe, expect, inject, it } from 'vitest';
import { startLocalRuntime } from '../../lib/local/local-runtime.ts';
import { localActor } from '../../lib/server/core/audit/record.ts';
import type { RolloutAnswer as RolloutRecord } from '../../lib/server/core/rollout/pages.ts';
import type { NodeStatus } from '../../lib/server/core/views/ports.ts';
import { addEnrolledNode } from '../support/enrolled-nodes.ts';

/**
 * A rollout over a fleet of which some nodes never enrolled (docs/decisions/held-back.md): its
 * waves send them what they release (their hosts fetch it when they enrol) and skip them, named
 * `never enrolled`, neither waited on for the wave's hour nor counted as failures; the rollout
 * finishes on the reports of the enrolled ones alone, and `GET /status` says `enrolled: false`.
 */
describe('a rollout over enrolled and never enrolled nodes', () => {
  it('finishes without waiting for the nodes that never enrolled, naming them skipped', async () => {
    const runtime = await startLocalRuntime({
      port: 0,
      mqttPort: 0,
      given: inject('endpoints'),
      resourcePrefix: `unenrolled-${Date.now()}`,
    });
    try {
      const enrolled = ['ua', 'ub'];
      const never = ['uc', 'ud', 'ue'];
      for (const node of enrolled) await addEnrolledNode(runtime.parts, node);
      for (const node of never) await runtime.parts.meshService.addNode(node, {}, localActor());
      for (const node of [...enrolled, ...never])
        await runtime.parts.meshService.assign(node, 'web', null, localActor());
      const started = await fetch(`${runtime.url}/rollouts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // an hour a wave: a node waited on would hold the rollout far past this test
        body: JSON.stringify({ behind: true, waves: '2,100%', waveTimeout: '1h' }),
      });
      expect(started.status).toBe(201);
      const { id } = (await started.json()) as RolloutRecord;
      const began = Date.now();
      let sequence = 1;
      let record: RolloutRecord | undefined;
      while (Date.now() - began < 30_000) {
        record = (await (await fetch(`${runtime.url}/rollouts/${id}`)).json()) as RolloutRecord;
        if (record.state === 'done') break;
        // the enrolled hosts answer for the revision they were sent, as a host's report would
        const at = new Date().toISOString();
        for (const wave of record.waves)
          for (const n of wave.nodes)
            if (enrolled.includes(n.node) && n.state === 'waiting' && n.revision !== undefined)
              await runtime.parts.reports.recordReport(
                { node: n.node, sequence: sequence++, state: 'applied', revision: n.revision, sentAt: at },
                { heardAt: at, queuedAt: at },
              );
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(record?.state).toBe('done');
      const outcomes = (record?.waves ?? []).flatMap((w) =>
        w.nodes.map((n) => [n.node, n.state, n.step ?? null]),
      );
      expect(outcomes.sort()).toEqual([
        ['ua', 'applied', null],
        ['ub', 'applied', null],
        ['uc', 'skipped', 'never enrolled'],
        ['ud', 'skipped', 'never enrolled'],
        ['ue', 'skipped', 'never enrolled'],
      ]);
      const { nodes } = (await (await fetch(`${runtime.url}/status`)).json()) as { nodes: NodeStatus[] };
      // sent what the rollout released: their hosts fetch it when they enrol
      expect(
        nodes.filter((n) => never.includes(n.node)).map((n) => [n.node, n.enrolled, n.sentRevision]),
      ).toEqual(never.map((node) => [node, false, 1]));
    } finally {
      await runtime.stop();
    }
  });
});
