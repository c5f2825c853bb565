#!/usr/bin/env node
import { readdirSync } from 'node:fs';
import { type BenchTable, formatTable } from './support/table.ts';

/** `npm run bench -- NAME` runs bench/NAME.bench.ts and prints its tables; no name lists them. */
const available = readdirSync(new URL('.', import.meta.url))
  .filter((file) => file.endsWith('.bench.ts'))
  .map((file) => file.replace(/\.bench\.ts$/, ''))
  .sort();

const names = process.argv.slice(2);
if (names.length === 0) {
  process.stdout.write(`usage: npm run bench -- NAME [NAME…]\navailable: ${available.join(', ')}\n`);
  process.exit(2);
}
for (const name of names) {
  if (!available.includes(name)) {
    process.stderr.write(`bench: no benchmark named ${name}; available: ${available.join(', ')}\n`);
    process.exit(2);
  }
}
// Benches point the SDK at the emulators they start; each starts from the environment it was given.
const environment = { ...process.env };
for (const name of names) {
  for (const key of Object.keys(process.env)) if (!(key in environment)) delete process.env[key];
  Object.assign(process.env, environment);
  process.stdout.write(`bench ${name}: running…\n`);
  const module = (await import(`./${name}.bench.ts`)) as { run(): Promise<BenchTable[]> };
  const started = performance.now();
  const tables = await module.run();
  for (const table of tables) process.stdout.write(`\n${formatTable(table)}`);
  process.stdout.write(`bench ${name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}
process.exit(0);
