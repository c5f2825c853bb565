import { describe, expect, it } from 'vitest';
import { consoleReadRoutes } from '../../lib/clients/cli/console/routes.ts';
import { mayCall } from '../../lib/server/core/roles.ts';
import {
  arnPathOf,
  arnPathReaches,
  roleNeeded,
  roleProblems,
  routesOfRole,
  wildcardProblems,
} from '../../lib/server/functions/roles.ts';
import { type Route, routes } from '../../lib/server/functions/table.ts';

const route = (method: Route['method'], path: string, role?: Route['role']): Route => ({
  method,
  path,
  auth: 'operator',
  handler: `${method} ${path}`,
  ...(role ? { role } : {}),
});

describe('the operator roles of the function table', () => {
  it('every operator route names a role, and no other route names one', () => {
    expect(roleProblems(routes)).toEqual([]);
  });

  it('a route without a role is refused, so a new row cannot be left out of every policy', () => {
    expect(
      roleProblems([
        ...routes,
        route('POST', '/rollouts'),
        { method: 'GET', path: '/hosts/{node}/x', auth: 'host', role: 'admin', handler: 'h' },
      ]),
    ).toEqual([
      'POST /rollouts (POST /rollouts) is an operator route and names no role',
      'GET /hosts/{node}/x (h) is a host route and names the role admin',
    ]);
  });

  it('gives the admin routes the issue names to admin only', () => {
    const adminOnly = routes
      .filter((candidate) => candidate.role === 'admin')
      .map((r) => `${r.method} ${r.path}`);
    expect(adminOnly.sort()).toEqual(
      [
        'DELETE /nodes/{node}',
        'DELETE /nodes/{node}/enrolment',
        'DELETE /nodes/{node}/report',
        'DELETE /nodes/{node}/token',
        'POST /agent/releases',
        'POST /builds/retractions',
        'POST /mesh/apply/prune',
        'POST /nodes/{node}/token',
      ].sort(),
    );
    expect(
      routes
        .filter((candidate) => candidate.method === 'GET' && candidate.auth === 'operator')
        .map((r) => r.role),
    ).toEqual(expect.arrayContaining(['viewer']));
    expect(
      routes.filter(
        (candidate) =>
          candidate.method === 'GET' && candidate.auth === 'operator' && candidate.role !== 'viewer',
      ),
    ).toEqual([]);
  });

  it('lets a viewer read everything the console reads', () => {
    expect(
      consoleReadRoutes.map((path) => roleNeeded(routes, 'GET', path.replace(/\{\w+\}/g, 'alpha'))?.role),
    ).toEqual(consoleReadRoutes.map(() => 'viewer'));
  });

  it('each role is allowed what the ones before it are', () => {
    expect([
      mayCall('viewer', 'operator'),
      mayCall('operator', 'viewer'),
      mayCall('admin', 'operator'),
    ]).toEqual([false, true, true]);
    expect(routesOfRole(routes, 'viewer').length).toBeLessThan(routesOfRole(routes, 'operator').length);
    expect(routesOfRole(routes, 'admin')).toEqual(
      routes.filter((candidate) => candidate.auth === 'operator'),
    );
  });

  it('names the role a request needs', () => {
    expect(roleNeeded(routes, 'POST', '/nodes/alpha/token')).toEqual({
      role: 'admin',
      route: 'POST /nodes/{node}/token',
    });
    expect(roleNeeded(routes, 'POST', '/push?wait=1')?.role).toBe('operator');
    expect(roleNeeded(routes, 'GET', '/nodes/alpha')?.role).toBe('viewer');
    expect(roleNeeded(routes, 'POST', '/hosts/alpha/reports')).toBeUndefined();
    expect(roleNeeded(routes, 'GET', '/nowhere')).toBeUndefined();
  });
});

describe('a * in an execute-api ARN matches the segments after it', () => {
  it('reads a path parameter as one segment, and IAM’s * as anything', () => {
    expect(arnPathOf('/nodes/{node}/modules/{module}')).toBe('/nodes/*/modules/*');
    expect(arnPathReaches('/nodes/*', '/nodes/{node}/token')).toBe(true);
    expect(arnPathReaches('/nodes/*', '/nodes')).toBe(false);
    expect(arnPathReaches('/nodes/*/modules/*', '/nodes/{node}/token')).toBe(false);
    expect(arnPathReaches('/nodes/*/x', '/nodes/{node}/{other}')).toBe(true);
    expect(arnPathReaches('/builds', '/builds/retractions')).toBe(false);
    expect(arnPathReaches('/a/*/c', '/a/{b}/c/{d}')).toBe(true); // /a/b/c/c
    expect(arnPathReaches('/a/*/c', '/a/{b}')).toBe(false);
    expect(arnPathReaches('/a/*', '/a/{b}/c/{d}')).toBe(true);
  });

  it('no role’s ARNs reach a route of a higher role in the table', () => {
    expect(wildcardProblems(routes)).toEqual([]);
  });

  it('names the ARN that would, when a lower role’s route ends in a parameter above a higher one', () => {
    expect(
      wildcardProblems([
        route('DELETE', '/things/{thing}', 'operator'),
        route('DELETE', '/things/{thing}/key', 'admin'),
      ]),
    ).toEqual([
      "MeshOperator's DELETE /things/* would also reach DELETE /things/{thing}/key, which needs MeshAdmin",
    ]);
  });
});
