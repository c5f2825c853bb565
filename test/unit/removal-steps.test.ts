import { describe, expect, it } from 'vitest';
import {
  firstStep,
  joinSteps,
  type RelationRef,
  type RemovalPlan,
} from '../../lib/server/core/mesh/removal.ts';

const relation = (consumerNode: string, consumerModule: string): RelationRef => ({
  consumerNode,
  consumerModule,
  providerNode: 'hub',
  providerModule: 'db',
});

const plan: RemovalPlan = {
  relations: [relation('a', 'web'), relation('b', 'web'), relation('c', 'jobs')],
  assignments: [
    { node: 'hub', module: 'db' },
    { node: 'hub', module: 'cache' },
  ],
  node: 'hub',
  marked: ['a', 'b', 'c'],
};

/** A store that takes `size` relations and assignments at once. */
const upTo = (size: number) => (step: RemovalPlan) => step.relations.length + step.assignments.length <= size;

describe('a removal in steps', () => {
  it('takes relations first, marking both ends and the node removed from, never the node itself', () => {
    expect(firstStep(plan, 'hub', upTo(2))).toEqual({
      relations: [relation('a', 'web'), relation('b', 'web')],
      assignments: [],
      marked: ['a', 'b', 'hub'],
    });
  });

  it('takes assignments only once every relation is in', () => {
    const step = firstStep(plan, 'hub', upTo(4));
    expect(step?.relations).toHaveLength(3);
    expect(step?.assignments).toEqual([{ node: 'hub', module: 'db' }]);
    expect(step?.node).toBeUndefined();
    expect(firstStep({ ...plan, relations: [] }, 'hub', upTo(1))?.assignments).toEqual([
      { node: 'hub', module: 'db' },
    ]);
  });

  it('is nothing when not even one relation fits', () => {
    expect(firstStep(plan, 'hub', upTo(0))).toBeUndefined();
  });

  it('joins the steps into what the removal took away, the removed node marked by none', () => {
    const first = firstStep(plan, 'hub', upTo(2)) as RemovalPlan;
    const last: RemovalPlan = { ...plan, relations: plan.relations.slice(2) };
    expect(joinSteps([first, last])).toEqual({ ...plan, marked: ['a', 'b', 'c'] });
  });
});
