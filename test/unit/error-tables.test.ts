import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { meshProblem } from '../../lib/server/api/mesh-problems.ts';
import { ErrorTable } from '../../lib/server/core/error-table.ts';
import { PushFlowFailedError, pushFailures } from '../../lib/server/core/mesh/errors.ts';

const root = join(import.meta.dirname, '../..');

function sources(folder: string): string[] {
  return readdirSync(join(root, folder)).flatMap((entry) => {
    const path = join(folder, entry);
    if (statSync(join(root, path)).isDirectory()) return sources(path);
    return entry.endsWith('.ts') ? [path] : [];
  });
}

type ErrorClass = abstract new (...args: never[]) => Error;
const isErrorClass = (value: unknown): value is ErrorClass =>
  typeof value === 'function' && value.prototype instanceof Error;

/** Every module of the core, its exported error classes and tables (an area's errors.ts exports both). */
async function core() {
  const classes = new Map<ErrorClass, string>();
  const tables = new Map<string, ErrorTable>();
  for (const file of sources('lib/server/core')) {
    const exports = (await import(join(root, file))) as Record<string, unknown>;
    for (const [name, value] of Object.entries(exports)) {
      if (isErrorClass(value)) classes.set(value, `${relative(root, join(root, file))}: ${name}`);
      if (value instanceof ErrorTable) tables.set(`${file}: ${name}`, value);
    }
  }
  return { classes, tables };
}

/** The areas' own tables; `pushFailures` joins two of them. */
const areaTables = (tables: Map<string, ErrorTable>) =>
  [...tables].filter(([where]) => !where.endsWith(': pushFailures'));

describe('every error has its row in its area’s table', () => {
  it('every error class the core exports has a row of its own', async () => {
    const { classes, tables } = await core();
    const answered = new Set(
      [...tables.values()].flatMap((table) => [...table.rows.values()].map((r) => r.error)),
    );

    const missing = [...classes].filter(([error]) => !answered.has(error)).map(([, where]) => where);

    expect(missing).toEqual([]);
    expect(tables.size).toBeGreaterThanOrEqual(6);
  });

  it('each row is named by its class, every name ends in Error, and no name is in two areas', async () => {
    const { tables } = await core();
    const rows = areaTables(tables).flatMap(([, table]) => [...table.rows]);

    const misnamed = rows
      .filter(([name, row]) => row.error && (row.error.name !== name || !name.endsWith('Error')))
      .map(([name]) => name);
    const names = rows.map(([name]) => name);

    expect(misnamed).toEqual([]);
    expect(names.filter((name, index) => names.indexOf(name) !== index)).toEqual([]);
  });

  it('a row says what the operator is told: its message, or in its place what it says', async () => {
    const { tables } = await core();
    const rows = areaTables(tables).flatMap(([, table]) => [...table.rows]);

    const untold = rows
      .filter(([, row]) => row.status !== 500 && !row.messageShown && row.says === undefined)
      .map(([name]) => name);
    const toldDefects = rows
      .filter(([, row]) => row.status === 500 && row.messageShown)
      .map(([name]) => name);
    const retriedNotTransient = rows
      .filter(([, row]) => row.retriedByFlow && row.retryAfterSeconds === undefined)
      .map(([name]) => name);

    expect({ untold, toldDefects, retriedNotTransient }).toEqual({
      untold: [],
      toldDefects: [],
      retriedNotTransient: [],
    });
  });
});

describe('a push failure that arrives by name is answered as the error itself', () => {
  // What a Task threw crosses Step Functions (and a push's record) as its name and message only.
  const byName = [...pushFailures.rows].filter(([, row]) => row.error && !row.relays);

  it('every row a push can fail with is answered without the error’s fields', () => {
    const needFields = [...pushFailures.rows]
      .filter(([, row]) => typeof row.status !== 'number' || typeof row.code !== 'string')
      .map(([name]) => name);

    expect(needFields).toEqual([]);
  });

  it.each(byName)('%s: the same status, code, message and headers by name as by class', (name, row) => {
    const error = Object.assign(Object.create((row.error as ErrorClass).prototype) as Error, {
      name,
      message: `what ${name} says`,
    });

    const byClass = meshProblem(error);
    const relayed = meshProblem(new PushFlowFailedError(name, error.message));

    const seen = (problem: typeof byClass) =>
      problem && {
        status: problem.status,
        code: problem.code,
        message: problem.message,
        headers: problem.headers,
      };
    expect(seen(relayed)).toEqual(seen(byClass));
    if (!row.details) expect(relayed?.details).toEqual(byClass?.details);
  });
});
