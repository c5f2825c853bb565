import type { ListPath } from '../answer-pages.ts';
import { MeshError } from '../mesh/errors.ts';

/**
 * The export and the plan a page at a time (docs/mesh-file.md, "Pages"): each page is cut from
 * the whole answer computed again on the mesh as it is, so every page must be of one revision.
 */

/** A plan's lists, in the order its pages carry them; every other field is on every page. */
export const planListPaths: readonly ListPath[] = [
  ['add', 'nodes'],
  ['add', 'modules'],
  ['add', 'relations'],
  ['labels'],
  ['remove', 'relations'],
  ['remove', 'modules'],
  ['remove', 'nodes'],
  ['drift', 'nodes'],
  ['drift', 'modules'],
  ['drift', 'relations'],
  ['drift', 'labels'],
  ['provisions', 'minted'],
  ['provisions', 'withdrawn'],
  ['behind'],
  ['problems'],
];

/** A page of the export asked on a mesh other than the first page's: the pages would not join into one file. */
export class ExportMovedError extends MeshError {
  override name = 'ExportMovedError';
  readonly exported: string;
  readonly current: string;
  constructor(exported: string, current: string, options?: ErrorOptions) {
    super(
      `the export's first page was of mesh revision ${exported}, and the mesh is at ${current} now: export again`,
      options,
    );
    this.exported = exported;
    this.current = current;
  }
}
