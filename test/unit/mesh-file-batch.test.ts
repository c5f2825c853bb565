import { describe, expect, it } from 'vitest';
import { Batch, type Keyed } from '../../lib/server/adapters/mesh-file/mesh-file-batch.ts';

const node = (name: string) => ({ pk: `node#${name}`, sk: 'node' });
const count = (name: string, counts: Record<string, number>, limits: Record<string, number>): Keyed => ({
  key: node(name),
  op: { op: 'count', counts, limits },
});

describe('one transaction of an apply', () => {
  it('merges the counts of one node item, holding the limit for their sum', () => {
    const batch = new Batch();
    batch.add([count('broker-1', { consumers: 1 }, { consumers: 300 })]);
    batch.add([count('broker-1', { consumers: 1 }, { consumers: 300 })]);
    batch.add([count('broker-1', { consumes: 1 }, { consumes: 200 })]);
    const [item] = batch.items('inventory');
    expect(batch.size).toBe(1);
    expect(item?.write.Update).toMatchObject({
      UpdateExpression: 'ADD consumers :consumers, consumes :consumes',
      ConditionExpression:
        'attribute_exists(pk) AND (attribute_not_exists(consumers) OR consumers <= :consumersMax) AND (attribute_not_exists(consumes) OR consumes <= :consumesMax)',
      ExpressionAttributeValues: {
        ':consumers': 2,
        ':consumersMax': 298,
        ':consumes': 1,
        ':consumesMax': 199,
      },
    });
  });

  it("folds an assignment's presence check into its provider update, and refuses two puts of one item", () => {
    const key = { pk: 'node#a', sk: 'module#m' };
    const batch = new Batch();
    batch.add([{ key, op: { op: 'check', condition: 'attribute_exists(pk)' } }]);
    batch.add([{ key, op: { op: 'consumedBy', n: 1 } }]);
    expect(batch.items('inventory').map(({ write }) => Object.keys(write)[0])).toEqual(['Update']);
    const put: Keyed = { key: node('a'), op: { op: 'put', item: node('a') } };
    batch.add([put]);
    expect(() => batch.add([put])).toThrow('two writes of one item');
  });

  it("fits a fact only while the distinct items stay within 96: 100 less the audit record's 3 and the job ledger's 1", () => {
    const batch = new Batch();
    batch.add(Array.from({ length: 95 }, (_, i) => count(`n${i}`, { modules: 1 }, { modules: 100 })));
    expect(
      batch.fits([
        count('n0', { modules: 1 }, { modules: 100 }),
        count('x', { modules: 1 }, { modules: 100 }),
      ]),
    ).toBe(true);
    expect(
      batch.fits([
        count('x', { modules: 1 }, { modules: 100 }),
        count('y', { modules: 1 }, { modules: 100 }),
      ]),
    ).toBe(false);
  });
});
