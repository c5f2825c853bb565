#!/usr/bin/env node
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The apply hook the beds give `mesh-host run --apply`: it writes down what it applied, and a
 * provider "mints" each granted resource (a broker vhost, say) by writing a file named after it.
 * It converges, as docs/hook-writers.md asks of every hook: a resource no longer granted is
 * dropped (its file removed) in the same apply.
 * BED_APPLY_DELAY_MS makes the step slow, so a bed can act while a host is mid-apply. A line
 * `module=version` in the record folder's `fail-on` makes it fail (exit 1) on a declaration that
 * carries that module at that version, as a release that does not start would; a line
 * `module=version MS` in `slow-on` makes such an apply take MS longer.
 */
type Declaration = {
  node: string;
  modules: Array<{ name: string; version: string | null }>;
  grants: Array<{ module: string; kind: string; resource: string; user: string; consumer: { node: string } }>;
  provisions: Array<{ module: string; resource: string; provider: { node: string } }>;
};

const record = process.env.BED_RECORD_DIR;
const path = process.env.MESH_DECLARATION;
const revision = process.env.MESH_REVISION;
if (!record || !path || !revision) {
  process.stderr.write('apply-hook: BED_RECORD_DIR, MESH_DECLARATION and MESH_REVISION must be set\n');
  process.exit(2);
}

const declaration = JSON.parse(readFileSync(path, 'utf8')) as Declaration;
appendFileSync(join(record, 'started.log'), `${revision}\n`);
await sleep(Number(process.env.BED_APPLY_DELAY_MS ?? 0));

// A line `module=version MS` in `slow-on` makes the apply of a declaration that carries it take MS longer.
const slowOn = join(record, 'slow-on');
const slow = existsSync(slowOn)
  ? readFileSync(slowOn, 'utf8')
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .find(([pair]) => declaration.modules.some((m) => `${m.name}=${m.version}` === pair))
  : undefined;
if (slow) await sleep(Number(slow[1] ?? 0));

const failOn = join(record, 'fail-on');
const bad = existsSync(failOn)
  ? readFileSync(failOn, 'utf8')
      .split('\n')
      .map((line) => line.trim().split('='))
      .find(([module, version]) =>
        declaration.modules.some((m) => m.name === module && m.version === version),
      )
  : undefined;
if (bad) {
  appendFileSync(join(record, 'failed.log'), `${revision} ${bad.join('=')}\n`);
  process.stderr.write(`apply-hook: ${bad.join(' ')} does not start on ${declaration.node}\n`);
  process.exit(1);
}

const vhosts = join(record, 'vhosts');
mkdirSync(vhosts, { recursive: true });
const granted = new Set(declaration.grants.map((grant) => grant.resource));
for (const minted of readdirSync(vhosts)) {
  if (!granted.has(minted)) rmSync(join(vhosts, minted));
}
for (const grant of declaration.grants) {
  writeFileSync(join(vhosts, grant.resource), `${grant.user} for ${grant.consumer.node}\n`);
}
// Written aside and renamed, so a bed that sees the record never reads half of a large one.
const applied = join(record, `applied-${revision}.json`);
writeFileSync(`${applied}.partial`, JSON.stringify(declaration, null, 2));
renameSync(`${applied}.partial`, applied);
appendFileSync(join(record, 'applied.log'), `${revision}\n`);
process.stdout.write(
  `apply-hook: applied revision ${revision} on ${declaration.node} (${declaration.grants.length} grants)\n`,
);
