import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionSpecs } from '../../lib/server/functions/table.ts';

const root = join(import.meta.dirname, '../..');

function sources(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, folder))) {
    const path = join(folder, entry);
    if (statSync(join(root, path)).isDirectory()) found.push(...sources(path));
    else if (entry.endsWith('.ts')) found.push(path);
  }
  return found;
}

const text = (path: string) => readFileSync(join(root, path), 'utf8');
const offending = (files: string[], pattern: RegExp) =>
  files.filter((file) => pattern.test(text(file))).map((file) => relative(root, join(root, file)));

describe('the house rules, held by reading the code', () => {
  it('configuration is read once: nothing under lib/api, lib/adapters or lib/core reads it', () => {
    const inner = ['lib/api', 'lib/adapters', 'lib/core'].flatMap(sources);
    expect(offending(inner, /process\.env|readConfig\(/)).toEqual([]);
  });

  it('the core imports nothing of AWS, the CDK or the runtime around it', () => {
    expect(
      offending(
        sources('lib/core'),
        /(from |import |import\()'(@aws-sdk|aws-cdk-lib|@aws-lambda-powertools|@middy)/,
      ),
    ).toEqual([]);
  });

  it('lib/ is what ships: it imports nothing from the tools, the benches, the beds or the tests', () => {
    expect(offending(sources('lib'), /(from |import |import\()'(\.\.\/)+(tools|bench|beds|test)\//)).toEqual(
      [],
    );
  });

  it('handlers name the ports they take: only lib/runtime/ and functions/ import the composition root', () => {
    // The tests, beds and benches build parts of their own with partsFor, as functions/ does.
    const shipped = ['lib', 'bin', 'tools'].flatMap(sources);
    const reaching = shipped.filter(
      (file) => file !== 'lib/server/wiring/parts.ts' && !file.startsWith('lib/runtime/'),
    );
    expect(offending(reaching, /(from |import |import\()'[^']*\/wiring\.ts'/)).toEqual([]);
  });

  it('every function file is its row: the row’s factory, given the wiring’s parts', () => {
    const mismatched = functionSpecs
      .filter((spec) => {
        const file = text(`functions/${spec.name}.ts`);
        const called = new RegExp(
          `export const handler = ${spec.handler.name}\\((partsFor\\(readConfig\\(\\)\\))?\\);`,
        );
        return !called.test(file);
      })
      .map((spec) => spec.name);
    expect(mismatched).toEqual([]);
  });
});
