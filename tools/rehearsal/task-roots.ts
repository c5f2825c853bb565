import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

/** Whether a package.json above the code (the project's, for cdk.out) would decide how Node reads its `.js`. */
function typedFromOutside(codeDir: string): boolean {
  if (existsSync(join(codeDir, 'package.json'))) return false;
  for (let dir = dirname(resolve(codeDir)); dirname(dir) !== dir; dir = dirname(dir))
    if (existsSync(join(dir, 'package.json'))) return true;
  return false;
}

/**
 * Where a function's code runs from, as Lambda unpacks it into /var/task: the asset folder of
 * cdk.out itself, unless its handler is a `.js` file that a package.json above cdk.out (the
 * project's `"type": "module"`) would make Node read differently from Lambda, which reads
 * `.js` without a package.json of the code's own as CommonJS. Such code (CDK's own providers)
 * is copied to a folder of its own first.
 */
export class TaskRoots {
  #dir: string | undefined;

  of(codeDir: string, handler: string): string {
    const file = handler.slice(0, Math.max(0, handler.lastIndexOf('.')));
    if (!existsSync(join(codeDir, `${file}.js`)) || !typedFromOutside(codeDir)) return codeDir;
    this.#dir ??= mkdtempSync(join(tmpdir(), 'mesh-rehearsal-task-'));
    const copy = join(this.#dir, basename(codeDir));
    if (!existsSync(copy)) cpSync(codeDir, copy, { recursive: true });
    return copy;
  }

  remove(): void {
    if (this.#dir) rmSync(this.#dir, { recursive: true, force: true });
    this.#dir = undefined;
  }
}
