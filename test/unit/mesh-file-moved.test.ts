import { describe, expect, it } from 'vitest';
import {
  checkMeshFile,
  type LiveMesh,
  movedText,
  planApply,
  whatMoved,
} from '../../lib/server/core/mesh-file/index.ts';
import { brokerAndThreeWebs } from '../support/mesh-files.ts';

const empty: LiveMesh = { revision: 'r0', nodes: [] };
const bare = (node: string) => ({ node, labels: {}, assignments: [], relations: [] });

const planOn = (live: LiveMesh) => {
  const checked = checkMeshFile(brokerAndThreeWebs, { kinds: live.modules });
  if (!checked.mesh) throw new Error('the test file is bad');
  return planApply(checked.mesh, live, {
    prune: false,
    allowMassRemoval: false,
    locate: checked.locate,
    tests: [],
  });
};

describe('what moved between a saved plan and a plan now', () => {
  it('names nodes and relations the mesh gained or lost, whether the file holds them or not', () => {
    const saved = planOn(empty);
    const now = planOn({ revision: 'r1', nodes: [bare('web-1'), bare('stray-1')] });
    const moved = whatMoved(saved, now);
    expect(moved.nodes.added).toEqual({ count: 2, names: ['stray-1', 'web-1'] });
    expect(moved.nodes.removed.count).toBe(0);
    // And back: the saved plan saw them, the mesh lost them since.
    const back = whatMoved(now, saved);
    expect(back.nodes.removed.names).toEqual(['stray-1', 'web-1']);
    expect(movedText(moved)).toBe('2 nodes added (stray-1, web-1)');
  });

  it('says when nothing the plans see moved, and bounds its lists', () => {
    const plan = planOn(empty);
    expect(movedText(whatMoved(plan, plan))).toContain('no node or relation added or removed');
    const many = Array.from({ length: 25 }, (_, i) => bare(`n-${String(i).padStart(2, '0')}`));
    const moved = whatMoved(plan, planOn({ revision: 'r1', nodes: many }));
    expect(moved.nodes.added.count).toBe(25);
    expect(moved.nodes.added.names).toHaveLength(10);
    expect(movedText(moved)).toContain('and 15 more');
  });
});
