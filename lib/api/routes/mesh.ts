import type { Route } from '../routes.ts';

/** The mesh area's routes: the operator's changes to the mesh, push, status and what a node was sent. */
export const meshRoutes: readonly Route[] = [
  { method: 'POST', path: '/nodes', handler: 'mesh-node-add', auth: 'operator' },
  { method: 'PUT', path: '/nodes/{node}/modules/{module}', handler: 'mesh-assign', auth: 'operator' },
  {
    method: 'POST',
    path: '/nodes/{node}/modules/{module}/consumes',
    handler: 'mesh-consume',
    auth: 'operator',
  },
  { method: 'POST', path: '/push', handler: 'mesh-push', auth: 'operator' },
  { method: 'GET', path: '/status', handler: 'mesh-status', auth: 'operator' },
  { method: 'GET', path: '/nodes/{node}/declaration', handler: 'mesh-declaration', auth: 'operator' },
];
