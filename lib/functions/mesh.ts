import {
  meshAssignHandler,
  meshConsumeHandler,
  meshDeclarationHandler,
  meshNodeAddHandler,
  meshPushHandler,
  meshStatusHandler,
} from '../api/handlers/mesh.ts';
import { pushBeginHandler, pushFindBehindHandler, pushSendHandler } from '../api/handlers/push-tasks.ts';
import type { FunctionSpec } from './spec.ts';

/** The mesh area's functions: the operator's changes, push and its flow, status, what a node was sent. */
export const meshFunctions: readonly FunctionSpec[] = [
  {
    name: 'mesh-node-add',
    purpose: 'adds a node',
    trigger: 'api',
    route: { method: 'POST', path: '/nodes', auth: 'operator' },
    access: ['inventory:write'],
    handler: meshNodeAddHandler,
  },
  {
    name: 'mesh-assign',
    purpose: 'assigns a module, marking the node',
    trigger: 'api',
    route: { method: 'PUT', path: '/nodes/{node}/modules/{module}', auth: 'operator' },
    access: ['inventory:read', 'inventory:write'],
    handler: meshAssignHandler,
  },
  {
    name: 'mesh-consume',
    purpose: 'relates a consumer to a provider, marking the consumer',
    trigger: 'api',
    route: { method: 'POST', path: '/nodes/{node}/modules/{module}/consumes', auth: 'operator' },
    access: ['inventory:read', 'inventory:write'],
    handler: meshConsumeHandler,
  },
  {
    name: 'mesh-push',
    purpose: 'runs the push state machine and answers its outcome',
    trigger: 'api',
    route: { method: 'POST', path: '/push', auth: 'operator' },
    access: ['inventory:read', 'pushFlow:start'],
    timeoutSeconds: 29,
    handler: meshPushHandler,
  },
  {
    name: 'mesh-status',
    purpose: 'every node: enrolled, sent, applied, behind, last heard',
    trigger: 'api',
    route: { method: 'GET', path: '/status', auth: 'operator' },
    access: ['inventory:read'],
    timeoutSeconds: 29,
    handler: meshStatusHandler,
  },
  {
    name: 'mesh-declaration',
    purpose: 'what the node was last sent',
    trigger: 'api',
    route: { method: 'GET', path: '/nodes/{node}/declaration', auth: 'operator' },
    access: ['inventory:read'],
    handler: meshDeclarationHandler,
  },
  {
    name: 'push-begin',
    purpose: 'push flow: validates the request, composes and sends the named node',
    trigger: 'flow',
    access: ['inventory:read', 'inventory:write', 'signal:publish'],
    handler: pushBeginHandler,
  },
  {
    name: 'push-find-behind',
    purpose: 'push flow: finds the nodes behind now; at the bound, names what is still behind',
    trigger: 'flow',
    access: ['inventory:read', 'inventory:write'],
    timeoutSeconds: 60,
    handler: pushFindBehindHandler,
  },
  {
    name: 'push-send',
    purpose: 'push flow: composes and sends one batch of nodes',
    trigger: 'flow',
    access: ['inventory:read', 'inventory:write', 'signal:publish'],
    timeoutSeconds: 60,
    handler: pushSendHandler,
  },
];
