import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventTypes, presenceEvent, rolloutEvent } from '../../lib/server/core/events/events.ts';
import type { Advanced } from '../../lib/server/core/rollout/advance.ts';

const record = {
  id: '20261206T000000000Z-abcdef',
  origin: { kind: 'upgrade', module: 'nginx', version: '2.0', from: '1.0' },
  current: 1,
  waves: [{}, {}, {}],
} as unknown as Advanced['record'];

describe('the events a step of a rollout is worth', () => {
  it('tells started, paused, halted and done, with the wave and reason, and nothing for a wait or a send', () => {
    const at = '2026-12-06T00:00:00.000Z';
    expect(
      rolloutEvent({ record, decision: { kind: 'halted', reason: '2 failed, more than 0' } }, at),
    ).toEqual({
      type: 'rollout.halted',
      time: at,
      detail: {
        rollout: record.id,
        what: expect.stringContaining('nginx'),
        waves: 3,
        wave: 2,
        reason: '2 failed, more than 0',
      },
    });
    expect(rolloutEvent({ record, decision: { kind: 'claimed', total: 40 } }, at)?.type).toBe(
      'rollout.started',
    );
    expect(rolloutEvent({ record, decision: { kind: 'done' } }, at)?.type).toBe('rollout.done');
    expect(rolloutEvent({ record, decision: { kind: 'wait', until: at } }, at)).toBeUndefined();
    expect(rolloutEvent({ record, decision: { kind: 'send', wave: 1, nodes: ['a'] } }, at)).toBeUndefined();
    expect(presenceEvent({ node: 'web1', state: 'disconnected', atMs: 0, version: 1 }).type).toBe(
      'node.offline',
    );
  });

  it('lists every type in docs/events.md', () => {
    const page = readFileSync(join(import.meta.dirname, '../../docs/events.md'), 'utf8');
    const listed = [...page.matchAll(/^\| `([a-z]+\.[a-z]+)` \|/gm)].map((match) => match[1]);
    expect(listed).toEqual([...eventTypes]);
  });
});
