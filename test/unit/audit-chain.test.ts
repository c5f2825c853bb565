import { describe, expect, it } from 'vitest';
import {
  type AuditRecord,
  type ChainHead,
  localActor,
  nextRecord,
  nodeEntry,
} from '../../lib/server/core/audit/record.ts';
import { ChainCheck } from '../../lib/server/core/audit/verify.ts';

const day = 24 * 3600;
const startMs = Date.parse('2026-01-01T00:00:00Z');

/** A chain of `count` records, one a day, kept `retentionDays`. */
function chain(count: number, retentionDays = 365): { records: AuditRecord[]; head: ChainHead } {
  const records: AuditRecord[] = [];
  let head: ChainHead | undefined;
  for (let i = 0; i < count; i += 1) {
    const record = nextRecord(nodeEntry(localActor(`r${i}`), 'token.issue', 'web-1'), head, {
      time: new Date(startMs + i * day * 1000).toISOString(),
      retentionDays,
    });
    records.push(record);
    head = { seq: record.seq, hash: record.hash, expiresAt: record.expiresAt };
  }
  return { records, head: head as ChainHead };
}

/** The findings of a chain read as kept: each record at its place. */
function check(
  kept: ReadonlyArray<[number, AuditRecord]>,
  head: ChainHead | undefined,
  nowSeconds = startMs / 1000,
) {
  const checking = new ChainCheck('node:web-1', head, nowSeconds);
  const found = kept.flatMap(([place, record]) => checking.add(place, record));
  return [...found, ...checking.end()].map(({ seq, problem }) => `${seq} ${problem}`);
}

const placed = (records: readonly AuditRecord[]) =>
  records.map((record) => [record.seq, record] as [number, AuditRecord]);

describe('ChainCheck', () => {
  it('finds nothing in a chain as written', () => {
    const { records, head } = chain(5);

    expect(check(placed(records), head)).toEqual([]);
  });

  it('names a record altered: its hash no longer its own', () => {
    const { records, head } = chain(5);
    const kept = placed(records);
    kept[2] = [3, { ...(records[2] as AuditRecord), principal: 'someone-else' }];

    expect(check(kept, head)).toEqual(['3 altered']);
  });

  it('names a record altered and hashed again: its successor chained the old hash', () => {
    const { records, head } = chain(5);
    const kept = placed(records);
    const forged = { ...(records[1] as AuditRecord), outcome: 'refused' };
    const { hash: _hash, ...body } = forged;
    kept[1] = [
      2,
      nextRecord(
        nodeEntry(localActor('r1'), 'token.issue', 'web-1', { outcome: 'refused' }),
        { seq: 1, hash: body.prevHash, expiresAt: records[0]?.expiresAt as number },
        { time: forged.time, retentionDays: 365 },
      ),
    ];

    expect(check(kept, head)).toEqual(['2 altered']);
  });

  it('names records removed: a gap, the last, or all', () => {
    const { records, head } = chain(5);

    expect(
      check(
        placed(records).filter(([place]) => place !== 3),
        head,
      ),
    ).toEqual(['3 removed']);
    expect(check(placed(records).slice(0, 4), head)).toEqual(['5 removed']);
    expect(check([], head)).toEqual(['1 removed']);
  });

  it('names two records swapped as reordered', () => {
    const { records, head } = chain(5);
    const kept = placed(records);
    kept[1] = [2, records[2] as AuditRecord];
    kept[2] = [3, records[1] as AuditRecord];

    expect(check(kept, head)).toEqual(['2 reordered', '3 reordered']);
  });

  it('takes records gone past their TTL as gone, and no others', () => {
    const { records, head } = chain(5, 2);
    const now = (records[2]?.expiresAt as number) + 1;
    const kept = placed(records).slice(3);

    expect(check(kept, head, now)).toEqual([]);
    expect(check(kept, head, startMs / 1000)).toEqual(['1 removed']);
  });

  it('names a head whose expiry was edited to pass records taken off its end as expired', () => {
    const { records, head } = chain(5);
    const kept = placed(records).slice(0, 3);
    const now = (records[4]?.time ? Date.parse(records[4].time) : startMs) / 1000 + day;

    expect(check(kept, { ...head, expiresAt: 1_000 }, now)).toEqual(['3 altered']);
    // unedited, the same gap is what it is: removed
    expect(check(kept, head, now)).toEqual(['4 removed']);
  });

  it('keeps a chain’s expiries in order when the retention is shortened, so the oldest go first', () => {
    const long = nextRecord(nodeEntry(localActor('a'), 'token.issue', 'web-1'), undefined, {
      time: new Date(startMs).toISOString(),
      retentionDays: 365,
    });
    const short = nextRecord(
      nodeEntry(localActor('b'), 'token.issue', 'web-1'),
      { seq: long.seq, hash: long.hash, expiresAt: long.expiresAt },
      { time: new Date(startMs + day * 1000).toISOString(), retentionDays: 1 },
    );
    expect(short.expiresAt).toBe(long.expiresAt);
    expect(short.prevExpiresAt).toBe(long.expiresAt);
  });
});
