import type { CheckedMeshFile, checkMeshFile } from './read.ts';

/**
 * The last file checked, with the live kinds it was checked against: every part of an apply job
 * applies the same file, and checking it (parsing with positions for its problems) is
 * the largest fixed cost of a request at 10,000 nodes (docs/mesh-file.md, "Figures"), paid
 * before any write. The check is pure, so the same text and kinds give the same result; and
 * the kinds only fill in the modules the file gives none, so a good file checked against other
 * kinds reads the same against these when each of its modules has here the kind it was given
 * there: the first part of an apply writes the modules' records, and the next need not check
 * again for them.
 */
export class LastChecked {
  #last: { readonly file: string; readonly kinds: string; readonly checked: CheckedMeshFile } | undefined;
  readonly #check: CheckMeshFile;

  constructor(check: CheckMeshFile) {
    this.#check = check;
  }

  check(file: string, kinds: ReadonlyMap<string, string | null> | undefined): CheckedMeshFile {
    const key = JSON.stringify([...(kinds ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    const last = this.#last;
    if (last && last.file === file && (last.kinds === key || kindsAgree(last.checked, kinds))) {
      this.#last = { ...last, kinds: key };
      return last.checked;
    }
    const checked = this.#check(file, { kinds });
    this.#last = { file, kinds: key, checked };
    return checked;
  }
}

export type CheckMeshFile = typeof checkMeshFile;

/** Whether a good file's modules each have, in `kinds`, the kind its check gave them. */
function kindsAgree(
  checked: CheckedMeshFile,
  kinds: ReadonlyMap<string, string | null> | undefined,
): boolean {
  if (checked.problems.length > 0 || checked.omitted > 0 || !checked.mesh) return false;
  for (const node of checked.mesh.nodes)
    for (const { module, provides } of node.assignments)
      if ((kinds?.get(module) ?? null) !== provides) return false;
  return true;
}
