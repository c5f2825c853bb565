import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionSpecs } from '../../lib/server/functions/table.ts';

/**
 * The house rules, held by reading the code (docs/architecture.md). `lib/` is cut by what ships:
 * `server/` (to Lambda), `clients/` (to operators' and nodes' machines), `deploy/` (the CDK app)
 * and `local/` (what `npm start` runs in place of AWS). The rules are about imports, so they read
 * every `from '…'` and `import('…')` of a relative path.
 */

const root = join(import.meta.dirname, '../..');

function sources(folder: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, folder))) {
    const path = join(folder, entry);
    if (statSync(join(root, path)).isDirectory()) found.push(...sources(path));
    else if (/\.(ts|js)$/.test(entry)) found.push(path);
  }
  return found;
}

const text = (path: string) => readFileSync(join(root, path), 'utf8');
const offending = (files: string[], pattern: RegExp) =>
  files.filter((file) => pattern.test(text(file))).map((file) => relative(root, join(root, file)));

const importPattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

/** Every relative import of a file, as a path from the repository's root. */
function importsOf(file: string): string[] {
  return [...text(file).matchAll(importPattern)].map((match) =>
    normalize(join(dirname(file), match[1] ?? '')),
  );
}

type Edge = { readonly from: string; readonly to: string; readonly because: string };

/** Folder-to-folder imports: an edge for each folder that imports from another, with one file that does. */
function folderEdges(files: readonly string[]): Edge[] {
  const edges = new Map<string, Edge>();
  for (const file of files) {
    for (const target of importsOf(file)) {
      const [from, to] = [dirname(file), dirname(target)];
      if (from !== to && !edges.has(`${from}>${to}`))
        edges.set(`${from}>${to}`, { from, to, because: `${file} -> ${target}` });
    }
  }
  return [...edges.values()];
}

/** The strongly connected parts of more than one folder (Tarjan): each is an import loop. */
function loopsOf(edges: readonly Edge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  let counter = 0;
  const visit = (folder: string) => {
    index.set(folder, counter);
    low.set(folder, counter);
    counter += 1;
    stack.push(folder);
    onStack.add(folder);
    for (const to of next.get(folder) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(folder, Math.min(low.get(folder) ?? 0, low.get(to) ?? 0));
      } else if (onStack.has(to)) low.set(folder, Math.min(low.get(folder) ?? 0, index.get(to) ?? 0));
    }
    if (low.get(folder) === index.get(folder)) {
      const part: string[] = [];
      for (;;) {
        const member = stack.pop() as string;
        onStack.delete(member);
        part.push(member);
        if (member === folder) break;
      }
      if (part.length > 1) loops.push(part.sort());
    }
  };
  for (const folder of next.keys()) if (!index.has(folder)) visit(folder);
  return loops;
}

const under = (folder: string) => (path: string) => path === folder || path.startsWith(`${folder}/`);

/** Imports from files under `from` into files under any of `into`, as "file -> target". */
function importsInto(
  from: string,
  into: readonly string[],
  except: (target: string) => boolean = () => false,
) {
  return sources(from).flatMap((file) =>
    importsOf(file)
      .filter((target) => into.some((folder) => under(folder)(target)) && !except(target))
      .map((target) => `${file} -> ${target}`),
  );
}

describe('the house rules, held by reading the code', () => {
  it('configuration is read in one place: only lib/server/setup reads it on the server', () => {
    const server = sources('lib/server').filter((file) => !under('lib/server/setup')(file));
    expect(offending(server, /process\.env|readConfig\(/)).toEqual([]);
  });

  it('the core imports nothing of AWS, the CDK or the runtime around it, and nothing outside the core', () => {
    expect(
      offending(
        sources('lib/server/core'),
        /(from |import |import\()'(@aws-sdk|aws-cdk-lib|@aws-lambda-powertools|@middy)/,
      ),
    ).toEqual([]);
    expect(importsInto('lib/server/core', ['lib', 'functions'], under('lib/server/core'))).toEqual([]);
  });

  it('lib/ is what ships: it imports nothing from the tools, the benches, the beds or the tests', () => {
    expect(importsInto('lib', ['tools', 'bench', 'beds', 'test'])).toEqual([]);
  });

  it('no import loop between folders: every folder of lib/ and functions/ sits above the ones it imports', () => {
    const edges = folderEdges(['lib', 'functions'].flatMap(sources));
    const loops = loopsOf(edges).map((loop) => ({
      loop,
      because: edges
        .filter((edge) => loop.includes(edge.from) && loop.includes(edge.to))
        .map((e) => e.because),
    }));
    expect(loops).toEqual([]);
  });

  it('nothing that ships imports the local runtime: it hands its stand-ins and recorder in through the wiring', () => {
    const shipped = ['lib/server', 'lib/clients', 'lib/deploy', 'functions'];
    expect(shipped.flatMap((folder) => importsInto(folder, ['lib/local']))).toEqual([]);
  });

  it('a client imports no other client, their shared HTTP client and exit codes aside; the host agent nothing of the CLI', () => {
    const shared = ['lib/clients/http', 'lib/clients/common'];
    const clients = ['lib/clients/cli', 'lib/clients/host'];
    for (const client of clients) {
      const others = clients.filter((other) => other !== client);
      expect(importsInto(client, others)).toEqual([]);
    }
    // What both share is below them: it imports neither.
    for (const folder of shared) expect(importsInto(folder, clients)).toEqual([]);
  });

  it('the server imports no client, and a client only the server’s pure core and its table of routes', () => {
    expect(importsInto('lib/server', ['lib/clients', 'lib/deploy'])).toEqual([]);
    const allowed = (target: string) =>
      under('lib/server/core')(target) || under('lib/server/functions')(target);
    expect(importsInto('lib/clients', ['lib/server', 'lib/deploy'], allowed)).toEqual([]);
  });

  it('handlers name the ports they take: only the local runtime and functions/ import the wiring', () => {
    // The tests, beds and benches build parts of their own with partsFor or localPartsFor, as functions/ does.
    const shipped = ['lib', 'bin', 'tools'].flatMap(sources);
    const reaching = shipped.filter((file) => !under('lib/server/wiring')(file) && !under('lib/local')(file));
    expect(
      reaching.flatMap((file) =>
        importsOf(file)
          .filter(under('lib/server/wiring'))
          .map((t) => `${file} -> ${t}`),
      ),
    ).toEqual([]);
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

describe('the loop finder the house rules use', () => {
  const edge = (from: string, to: string): Edge => ({ from, to, because: `${from}->${to}` });

  it('finds a loop of two and of three folders, and none in a ladder', () => {
    expect(loopsOf([edge('a', 'b'), edge('b', 'a')])).toEqual([['a', 'b']]);
    expect(loopsOf([edge('a', 'b'), edge('b', 'c'), edge('c', 'a'), edge('c', 'd')])).toEqual([
      ['a', 'b', 'c'],
    ]);
    expect(loopsOf([edge('a', 'b'), edge('b', 'c'), edge('a', 'c')])).toEqual([]);
  });
});
