import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Projects whose files are handed out first within a group, in this order. The package project's
 * two files are a bundled synthesis and a packaging, and the beds wait on the processes they
 * start; begun first, both overlap the integration tests' CPU instead of running on alone at the
 * end (vitest's own order is by project name, so the bundles began after every integration file
 * and ended the run's first group by themselves: 55 s of a 380 s run).
 */
const startFirst = ['package', 'beds'];

/**
 * The other files that take longest (15 s or more each, in a clean-clone run), handed out next,
 * longest first. A clean clone has no timings of vitest's own, and its fallback (largest file
 * first) left the route fuzz and the model's property test to start late and end the group on
 * one core. A file not here keeps vitest's order; one no longer in the tree is passed over.
 */
const longFirst = [
  'test/integration/rollout-store.test.ts',
  'test/integration/declaration-parts.test.ts',
  'test/integration/mesh-apply-job.test.ts',
  'test/integration/view-pages.test.ts',
  'test/integration/mesh-model.test.ts',
  'test/console/console.test.ts',
  'test/integration/route-fuzz.test.ts',
  'test/integration/control-queue.test.ts',
  'test/integration/local-runtime.test.ts',
  'test/integration/mesh-file-example.test.ts',
  'test/integration/summary.test.ts',
  'test/integration/mesh-push.test.ts',
];

/** vitest's order (each project's files longest first, from its cache, else largest first), `startFirst` then `longFirst` ahead. */
export default class RunOrder extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const rank = (spec: TestSpecification) => {
      const project = startFirst.indexOf(spec.project.name);
      if (project !== -1) return project;
      const long = longFirst.indexOf(spec.moduleId.slice(root.length + 1));
      return startFirst.length + (long === -1 ? longFirst.length : long);
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
