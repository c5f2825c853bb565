import { describe, expect, it } from 'vitest';
import { waitingText } from '../../lib/clients/cli/commands/mesh.ts';
import { waitingOf } from '../../lib/server/core/mesh/waiting.ts';

const relation = (provider: string, waitingFor: string[]) => ({
  module: 'app',
  provider: { node: provider, module: 'svc', kind: 'http' },
  waitingFor,
});

describe("a declaration's waiting relations, as a status row carries them", () => {
  it('are absent when none waits', () => {
    expect(waitingOf([])).toBeUndefined();
  });

  it('count the relations and the distinct nodes they wait for, naming the first ten by name', () => {
    const providers = Array.from({ length: 14 }, (_, i) => `p${String(13 - i).padStart(2, '0')}`);
    const waiting = [...providers.map((p) => relation(p, [p])), relation('p00', ['web', 'p00'])];

    expect(waitingOf(waiting)).toEqual({
      relations: 15,
      nodes: 15,
      for: ['p00', 'p01', 'p02', 'p03', 'p04', 'p05', 'p06', 'p07', 'p08', 'p09'],
    });
    expect(waitingOf([relation('db', ['db']), relation('db', ['db'])])).toEqual({
      relations: 2,
      nodes: 1,
      for: ['db'],
    });
  });

  it('are said for people, naming how many more nodes the row leaves out', () => {
    expect(waitingText({ relations: 1, nodes: 1, for: ['db'] })).toBe('1 relation waiting for db to enrol');
    expect(waitingText({ relations: 30, nodes: 12, for: ['a', 'b'] })).toBe(
      '30 relations waiting for a, b and 10 more to enrol',
    );
  });
});
