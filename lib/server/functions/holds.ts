import {
  freezeBody,
  freezeHandler,
  freezeListHandler,
  liftQuery,
  unfreezeHandler,
} from '../api/handlers/holds.ts';
import type { FunctionSpec } from './spec.ts';

/** Freezes (docs/decisions/held-back.md): an operator's hold on nodes, lifted by hand or by its time. */
export const holdFunctions = [
  {
    name: 'freeze',
    purpose: 'holds back every node a selector matches (or all), with a reason, until a time or until lifted',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/freezes',
      auth: 'operator',
      role: 'operator',
      request: { body: freezeBody },
    },
    access: ['inventory:read', 'inventory:write', 'audit:write'],
    handler: freezeHandler,
  },
  {
    name: 'unfreeze',
    purpose: 'lifts the freeze made on a selector (or on all): its nodes are sent again by the next push',
    trigger: 'api',
    route: {
      method: 'DELETE',
      path: '/freezes',
      auth: 'operator',
      role: 'operator',
      request: { query: liftQuery },
    },
    access: ['inventory:read', 'inventory:write', 'audit:write'],
    handler: unfreezeHandler,
  },
  {
    name: 'freeze-list',
    purpose: 'the freezes in force: what each holds, why, by whom and until when',
    trigger: 'api',
    route: { method: 'GET', path: '/freezes', auth: 'operator', role: 'viewer' },
    access: ['inventory:read'],
    handler: freezeListHandler,
  },
] as const satisfies readonly FunctionSpec[];
