import { describe, expect, it } from 'vitest';
import {
  distinctVersions,
  restoringVersion,
  settingVersion,
  upgradesRemembered,
} from '../../lib/server/core/mesh/agent-before.ts';

/** Each node's versions before the agent upgrades that set it one: what `mesh rollout undo` sets back. */
describe('a node’s agent versions before', () => {
  const r1 = '20261206T050000000Z-000001';
  const r2 = '20261206T060000000Z-000002';

  it('takes what the host reports running over what the mesh asked of it before', () => {
    expect(settingVersion({ agentVersion: '1.1' }, '1.0', '1.2', r1)).toEqual({
      write: { agentVersion: '1.2', agentBefore: { [r1]: { before: '1.0', set: '1.2' } } },
      before: '1.0',
    });
    expect(settingVersion({ agentVersion: '1.1' }, undefined, '1.2', r1).before).toBe('1.1');
    expect(settingVersion({}, undefined, '1.2', r1).before).toBeNull();
  });

  it('writes nothing at the version already, and answers the version before only to the rollout that set it', () => {
    const set = settingVersion({}, '1.0', '1.2', r1).write ?? {};
    expect(settingVersion(set, '1.2', '1.2', r1)).toEqual({ before: '1.0' });
    expect(settingVersion(set, '1.2', '1.2', r2)).toEqual({});
  });

  it('is set back by its own rollout’s undo, and an earlier upgrade’s undo leaves a later one', () => {
    const first = settingVersion({}, '1.0', '1.1', r1).write ?? {};
    const second = settingVersion(first, '1.1', '1.2', r2).write ?? {};
    expect(restoringVersion(second, r1, '1.1')).toBeUndefined();
    const back = restoringVersion(second, r2, '1.2');
    expect(back).toEqual({ agentVersion: '1.1', agentBefore: { [r1]: { before: '1.0', set: '1.1' } } });
    expect(restoringVersion(back ?? {}, r1, '1.1')).toEqual({ agentVersion: '1.0' });
  });

  it('is not set back by an earlier upgrade’s undo once a later one set the same version again (A→B, B→A, A→B)', () => {
    const r3 = '20261206T070000000Z-000003';
    const toB = settingVersion({}, 'A', 'B', r1).write ?? {};
    const toA = settingVersion(toB, 'B', 'A', r2).write ?? {};
    const toBAgain = settingVersion(toA, 'A', 'B', r3).write ?? {};
    expect(restoringVersion(toBAgain, r1, 'B')).toBeUndefined();
    expect(restoringVersion(toBAgain, r3, 'B')).toMatchObject({ agentVersion: 'A' });
  });

  it('takes the version away when none was known before, so the host is asked nothing', () => {
    const set = settingVersion({}, undefined, '1.2', r1).write ?? {};
    expect(restoringVersion(set, r1, '1.2')).toEqual({});
  });

  it(`remembers the newest ${upgradesRemembered} upgrades of a node`, () => {
    let fields = {};
    const ids = Array.from({ length: upgradesRemembered + 2 }, (_, i) => `20261206T0${i}0000000Z-00000${i}`);
    ids.forEach((id, i) => {
      fields = settingVersion(fields, undefined, `1.${i + 1}`, id).write ?? fields;
    });
    expect(Object.keys((fields as { agentBefore: object }).agentBefore)).toEqual(
      ids.slice(-upgradesRemembered),
    );
  });

  it('counts each version before once, up to a bound', () => {
    expect(distinctVersions(['1.1', null, '1.0', '1.1', undefined, '0.9'], 2)).toEqual(['1.0', '1.1']);
  });
});
