#!/usr/bin/env node
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The check the beds give `mesh-host run --check` (docs/hook-writers.md, "The check command"):
 * healthy (exit 0) unless a line `module=version [after=SECONDS]` in the record folder's
 * `sick-on` names a module and version the declaration carries: then it fails (exit 1, saying so
 * on stdout as a probe would), at once, or once SECONDS have passed since the apply hook applied
 * that revision (its `applied-<revision>.json`), as a release that starts and then dies would.
 */
type Declaration = { modules: Array<{ name: string; version: string | null }> };

const record = process.env.BED_RECORD_DIR;
const path = process.env.MESH_DECLARATION;
const revision = process.env.MESH_REVISION;
if (!record || !path || !revision) {
  process.stderr.write('check-hook: BED_RECORD_DIR, MESH_DECLARATION and MESH_REVISION must be set\n');
  process.exit(2);
}

const declaration = JSON.parse(readFileSync(path, 'utf8')) as Declaration;
const sickOn = join(record, 'sick-on');
const sick = existsSync(sickOn)
  ? readFileSync(sickOn, 'utf8')
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .map(([pair = '', after]) => ({ pair, after: Number(after?.replace(/^after=/, '') ?? 0) }))
      .find(({ pair }) => declaration.modules.some((m) => `${m.name}=${m.version}` === pair))
  : undefined;
const applied = join(record, `applied-${revision}.json`);
const appliedAt = existsSync(applied) ? statSync(applied).mtimeMs : Date.now();
if (sick && Date.now() - appliedAt >= sick.after * 1000) {
  process.stdout.write(`${sick.pair.replace('=', ' ')}: connection refused on :8080\n`);
  process.exit(1);
}
process.stdout.write(`ok: revision ${revision} answers on :8080\n`);
