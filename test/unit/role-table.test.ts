import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { routes } from '../../lib/server/functions/table.ts';

/** docs/audit.md's role table: each route it names, with the role it says. */
function documentedRoles(): Map<string, string> {
  const text = readFileSync(join(import.meta.dirname, '../../docs/audit.md'), 'utf8');
  const section = text.slice(text.indexOf('## Roles and what each route does'), text.indexOf('## Routes'));
  const roles = new Map<string, string>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 4 || !cells[1]?.startsWith('`')) continue;
    for (const route of cells[1].matchAll(/`([A-Z]+ [^`]+)`/g))
      roles.set(route[1] as string, cells[2] as string);
  }
  return roles;
}

describe('docs/audit.md’s role table', () => {
  it('names every operator route once, with the role its row gives it, and no other', () => {
    const table = Object.fromEntries(
      routes
        .filter((route) => route.auth === 'operator')
        .map((route) => [`${route.method} ${route.path}`, route.role]),
    );
    expect(Object.fromEntries(documentedRoles())).toEqual(table);
  });

  it('gives every route that takes a node out or takes its enrolment away to admin only', () => {
    const removing = ['DELETE /nodes/{node}', 'DELETE /nodes/{node}/enrolment', 'POST /mesh/apply/prune'];
    expect(removing.map((key) => documentedRoles().get(key))).toEqual(['admin', 'admin', 'admin']);
  });
});
