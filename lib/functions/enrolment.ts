import type { FunctionSpec } from './spec.ts';

/** The enrolment area's functions. */
export const enrolmentFunctions: readonly FunctionSpec[] = [
  {
    name: 'enrol',
    purpose: 'answers POST /enrol: claims the token, stores the node keys, spends the token',
    access: ['inventory:read', 'inventory:write', 'identity:read', 'identity:write'],
    trigger: 'api',
  },
  {
    name: 'token-issue',
    purpose: "answers POST /nodes/{node}/token: issues the node's one live token",
    access: ['inventory:read', 'inventory:write'],
    trigger: 'api',
  },
  {
    name: 'token-revoke',
    purpose: "answers DELETE /nodes/{node}/token: revokes the node's token",
    access: ['inventory:write'],
    trigger: 'api',
  },
  {
    name: 'host-declaration',
    purpose: 'answers GET /hosts/{node}/declaration: what the signed-in node was last sent',
    // proofs:write for the proof replay guard (a conditional put of each proof id).
    access: ['inventory:read', 'proofs:write', 'identity:read'],
    trigger: 'api',
  },
  {
    name: 'host-authorizer',
    purpose: 'REQUEST authorizer for host routes: checks the proof of possession before a handler runs',
    access: ['identity:read', 'inventory:read'],
    trigger: 'api',
  },
];
