import type { FunctionSpec } from './spec.ts';

/** The mesh area's functions. */
export const meshFunctions: readonly FunctionSpec[] = [
  { name: 'mesh-node-add', purpose: 'POST /nodes: adds a node', access: ['inventory:write'], trigger: 'api' },
  {
    name: 'mesh-assign',
    purpose: 'PUT /nodes/{node}/modules/{module}: assigns a module, marking the node',
    access: ['inventory:read', 'inventory:write'],
    trigger: 'api',
  },
  {
    name: 'mesh-consume',
    purpose: 'POST /nodes/{node}/modules/{module}/consumes: relates a consumer to a provider',
    access: ['inventory:read', 'inventory:write'],
    trigger: 'api',
  },
  {
    name: 'mesh-push',
    purpose: 'POST /push: runs the push state machine and answers its outcome',
    access: ['inventory:read', 'pushFlow:start'],
    trigger: 'api',
    timeoutSeconds: 29,
  },
  {
    name: 'mesh-status',
    purpose: 'GET /status: every node',
    access: ['inventory:read'],
    trigger: 'api',
    timeoutSeconds: 29,
  },
  {
    name: 'mesh-declaration',
    purpose: 'GET /nodes/{node}/declaration: what the node was last sent',
    access: ['inventory:read'],
    trigger: 'api',
  },
  {
    name: 'push-begin',
    purpose: 'push flow: validates the request, composes and sends the named node',
    access: ['inventory:read', 'inventory:write'],
    trigger: 'flow',
  },
  {
    name: 'push-find-behind',
    purpose: 'push flow: finds the nodes behind now; at the bound, names what is still behind',
    access: ['inventory:read', 'inventory:write'],
    trigger: 'flow',
    timeoutSeconds: 60,
  },
  {
    name: 'push-send',
    purpose: 'push flow: composes and sends one batch of nodes',
    access: ['inventory:read', 'inventory:write'],
    trigger: 'flow',
    timeoutSeconds: 60,
  },
];
