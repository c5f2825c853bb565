import { beforeAll, describe, expect, it } from 'vitest';
import { localPartsFor } from '../../lib/local/parts.ts';
import {
  doneRecord,
  keptNodesPerList,
  outcomeOfRecord,
  runningRecord,
} from '../../lib/server/core/push/records.ts';
import type { MeshConfig } from '../../lib/server/setup/config.ts';
import type { Parts } from '../../lib/server/wiring/parts.ts';
import { provisionTestResources } from '../support/resources.ts';

let config: MeshConfig;
let parts: Parts;

beforeAll(async () => {
  config = await provisionTestResources('pushrecord');
  parts = localPartsFor(config);
});

const longName = (i: number) => `node-${String(i).padStart(6, '0')}-`.padEnd(63, 'x');
const names = Array.from({ length: 1_000 }, (_, i) => longName(i));
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');

describe('a push’s record in DynamoDB Local', () => {
  it('keeps four lists of 1,000 63-character names under 350 KB, with exact counts and `more`', async () => {
    const outcome = {
      pushed: null,
      flushed: names.map((node) => ({ node, revision: 12_345, round: 3 })),
      rounds: 3,
      behind: names,
      unsendable: names.map((node) => ({
        node,
        reason: 'its declaration is 300,000 bytes, over the 262,144 a node is sent',
      })),
      heldBack: names.map((node, i) => ({
        node,
        by: 'rollout:20261206T013000000Z-38f38f',
        waitsFor: longName(i + 1_000),
      })),
    };
    // whole, the lists are past DynamoDB's 400 KB item: what the record must not keep
    expect(bytes(outcome)).toBeGreaterThan(400_000);
    const startedAt = new Date();
    const running = runningRecord(
      '20261206T013000000Z-38f38f',
      { behind: true },
      { requestedBy: 'local' },
      startedAt,
    );
    const done = doneRecord(running, outcome, new Date());

    await parts.pushRecords.finish(done);

    const kept = await parts.pushRecords.read(running.id);
    expect(kept).toEqual(done);
    expect(bytes(kept)).toBeLessThan(350_000);
    expect(kept).toMatchObject({
      flushedCount: 1_000,
      behindCount: 1_000,
      unsendableCount: 1_000,
      heldBackCount: 1_000,
      more: true,
    });
    // each list keeps its first nodes, in order
    expect(kept?.behind).toEqual(names.slice(0, kept?.behind.length));
    expect(kept?.heldBack?.length).toBeLessThan(keptNodesPerList);
    expect(kept?.heldBack?.length).toBeGreaterThan(400);
    expect(outcomeOfRecord(done)).toMatchObject({
      behindCount: 1_000,
      unsendableCount: 1_000,
      heldBackCount: 1_000,
      more: true,
    });
  });

  it('notes each hand-over of a running push, and a done record is left as it is', async () => {
    const id = '20261206T013100000Z-38f38f';
    const running = runningRecord(id, { behind: true }, { requestedBy: 'local' }, new Date());
    await parts.pushRecords.start(running, { principal: 'local', source: 'test', requestId: id });
    await parts.pushRecords.handedOn(id, new Date('2026-12-06T01:40:00Z'));
    await parts.pushRecords.handedOn(id, new Date('2026-12-06T01:50:00Z'));
    expect(await parts.pushRecords.read(id)).toMatchObject({
      state: 'running',
      handedOnAt: '2026-12-06T01:50:00.000Z',
      handOvers: 2,
    });
    const done = doneRecord(running, { pushed: null, flushed: [], rounds: 1, behind: [] }, new Date());
    await parts.pushRecords.finish(done);
    await parts.pushRecords.handedOn(id, new Date());
    expect(await parts.pushRecords.read(id)).toEqual(done);
  });
});
