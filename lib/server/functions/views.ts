import {
  controlDeadLettersHandler,
  limitQuery,
  meshGraphHandler,
  meshNodeListHandler,
  meshNodeShowHandler,
  meshPushesHandler,
  meshPushShowHandler,
  nodePath,
  pushPath,
} from '../api/handlers/views.ts';
import { viewQuerySchema } from '../api/view-query.ts';
import type { FunctionSpec } from './spec.ts';

/**
 * What operators look at: `mesh node list|show`, `mesh graph`, `mesh pushes` and the console.
 * Each reads only; the ones that read every node's partition get `mesh status`'s time.
 */
export const viewFunctions = [
  {
    name: 'mesh-node-list',
    purpose: 'every node with its modules, relation counts, sent, applied, behind',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/nodes',
      auth: 'operator',
      role: 'viewer',
      request: { query: viewQuerySchema },
    },
    access: ['inventory:read', 'inventory:list', 'inventory:views'],
    timeoutSeconds: 29,
    handler: meshNodeListHandler,
  },
  {
    name: 'mesh-node-show',
    purpose:
      'one node: modules, relations both ways, token, enrolment, sent, applied, declaration without secrets',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/nodes/{node}',
      auth: 'operator',
      role: 'viewer',
      request: { path: nodePath },
    },
    access: ['inventory:read'],
    timeoutSeconds: 29,
    handler: meshNodeShowHandler,
  },
  {
    name: 'mesh-graph',
    purpose: 'the mesh as a graph: nodes with their modules, consumer to provider relations',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/graph',
      auth: 'operator',
      role: 'viewer',
      request: { query: viewQuerySchema },
    },
    access: ['inventory:read', 'inventory:list', 'inventory:views'],
    timeoutSeconds: 29,
    handler: meshGraphHandler,
  },
  {
    name: 'mesh-pushes',
    purpose: 'the records of the latest pushes, newest first',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/pushes',
      auth: 'operator',
      role: 'viewer',
      request: { query: limitQuery(20) },
    },
    access: ['inventory:read'],
    handler: meshPushesHandler,
  },
  {
    name: 'mesh-push-show',
    purpose: 'the record of one push, while it runs and after',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/pushes/{push}',
      auth: 'operator',
      role: 'viewer',
      request: { path: pushPath },
    },
    access: ['inventory:read'],
    handler: meshPushShowHandler,
  },
  {
    name: 'control-dead-letters',
    purpose: 'what the consumer let go or dead-lettered, and the dead-letter queue count',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/dead-letters',
      auth: 'operator',
      role: 'viewer',
      request: { query: limitQuery(50) },
    },
    access: ['inventory:read', 'deadLetter:inspect'],
    handler: controlDeadLettersHandler,
  },
] as const satisfies readonly FunctionSpec[];
