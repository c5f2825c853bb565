import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Projects whose files are handed out first within a group, in this order. The package project's
 * two files are a bundled synthesis and a packaging, and the beds wait on the processes they
 * start; begun first, both overlap the integration tests' CPU instead of running on alone at the
 * end (vitest's own order is by project name, so the bundles began after every integration file
 * and ended the run's first group by themselves: 55 s of a 380 s run).
 */
const startFirst = ['package', 'beds'];

/** vitest's order (each project's files longest first, from its cache, else largest first), the projects in `startFirst` ahead. */
export default class RunOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const at = startFirst.indexOf(spec.project.name);
      return at === -1 ? startFirst.length : at;
    };
    const place = new Map(sorted.map((spec, index) => [spec, index]));
    return [...sorted].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        rank(a) - rank(b) ||
        (place.get(a) ?? 0) - (place.get(b) ?? 0),
    );
  }
}
