import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openApiDocument, openApiText } from '../../lib/server/functions/openapi.ts';
import { routes } from '../../lib/server/functions/table.ts';

const checkedIn = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
const document = openApiDocument(routes, version);
type Operation = {
  'x-mesh-role'?: string;
  security: Record<string, string[]>[];
  parameters?: { name: string; in: string; schema: Record<string, unknown> }[];
  requestBody?: { content: { 'application/json': { schema: Record<string, unknown> } } };
  responses: Record<string, unknown>;
};
const operationOf = (method: string, path: string) =>
  (document.paths[path] as Record<string, Operation>)[method.toLowerCase()] as Operation;

describe('docs/openapi.json', () => {
  it('is what `npm run openapi` writes from the route table', () => {
    expect(checkedIn, 'run `npm run openapi` and commit docs/openapi.json').toBe(openApiText(document));
  });

  it('holds every route with its role, its security, its path parameters and its body', () => {
    for (const route of routes) {
      const operation = operationOf(route.method, route.path);
      expect(operation['x-mesh-role'], `${route.method} ${route.path}`).toBe(route.role);
      const scheme = { operator: 'sigv4', host: 'hostProof' }[route.auth as string];
      expect(operation.security).toEqual(scheme ? [{ [scheme]: [] }] : []);
      const inPath = (operation.parameters ?? []).filter((parameter) => parameter.in === 'path');
      expect(inPath.map((parameter) => `{${parameter.name}}`).join('')).toBe(
        route.path.match(/\{[^}]+\}/g)?.join('') ?? '',
      );
      expect(operation.requestBody !== undefined, `${route.method} ${route.path}'s body`).toBe(
        route.request?.body !== undefined,
      );
      expect(Object.keys(operation.responses)).toEqual(['200', '4XX', '5XX']);
    }
  });

  it("gives a body the handler's own rules: a node's name pattern, a strict object", () => {
    const add = operationOf('POST', '/nodes').requestBody?.content['application/json'].schema ?? {};
    expect(add).toMatchObject({ type: 'object', additionalProperties: false, required: ['node'] });
    const pattern = new RegExp((add.properties as Record<string, { pattern: string }>).node?.pattern ?? '');
    expect(['web-1', 'Web', '1web', 'web-'].map((name) => pattern.test(name))).toEqual([
      true,
      false,
      false,
      false,
    ]);
    const remove = operationOf('DELETE', '/nodes/{node}').parameters ?? [];
    expect(remove.find((parameter) => parameter.name === 'cascade')?.schema).toMatchObject({
      enum: ['true', 'false'],
    });
  });
});
