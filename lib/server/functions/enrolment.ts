import {
  enrolBody,
  enrolHandler,
  issueTokenBody,
  nodeDisenrolHandler,
  nodePath,
  tokenIssueHandler,
  tokenRevokeHandler,
} from '../api/handlers/enrolment.ts';
import { hostDeclarationHandler } from '../api/handlers/host.ts';
import { hostAuthorizerHandler } from '../api/handlers/host-authorizer.ts';
import { hostKeysHandler } from '../api/handlers/host-keys.ts';
import { rotationBody } from '../core/enrolment/rotation.ts';
import type { FunctionSpec } from './spec.ts';

/** The enrolment area's functions: tokens, enrolment, and what a host fetches with its key. */
export const enrolmentFunctions = [
  {
    name: 'enrol',
    purpose: 'claims the token, stores the node keys, spends the token',
    trigger: 'api',
    route: { method: 'POST', path: '/enrol', auth: 'token', request: { body: enrolBody } },
    // Anyone holding a token calls it: the named node's token and keys only, no enumeration.
    access: ['tokens:enrol', 'control:send', 'audit:write', 'events:put'],
    handler: enrolHandler,
  },
  {
    name: 'token-issue',
    purpose: "issues the node's one live token",
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/nodes/{node}/token',
      auth: 'operator',
      role: 'admin',
      request: { path: nodePath, body: issueTokenBody },
    },
    access: ['tokens:issue', 'audit:write'],
    handler: tokenIssueHandler,
  },
  {
    name: 'token-revoke',
    purpose: "revokes the node's token",
    trigger: 'api',
    route: {
      method: 'DELETE',
      path: '/nodes/{node}/token',
      auth: 'operator',
      role: 'admin',
      request: { path: nodePath },
    },
    access: ['tokens:revoke', 'audit:write'],
    handler: tokenRevokeHandler,
  },
  {
    name: 'node-disenrol',
    purpose: "revokes a node's host identity (enrolment, token, keys); the node stays in the mesh",
    trigger: 'api',
    route: {
      method: 'DELETE',
      path: '/nodes/{node}/enrolment',
      auth: 'operator',
      role: 'admin',
      request: { path: nodePath },
    },
    access: ['hostIdentity:revoke', 'signal:publish', 'control:send', 'audit:write'],
    handler: nodeDisenrolHandler,
  },
  {
    name: 'host-declaration',
    purpose: 'what the signed-in node was last sent',
    trigger: 'api',
    route: { method: 'GET', path: '/hosts/{node}/declaration', auth: 'host', request: { path: nodePath } },
    // nodeKeys:verify and proofs:write for host authentication (node keys; the replay guard).
    access: ['deliveries:read', 'proofs:write', 'nodeKeys:verify'],
    handler: hostDeclarationHandler,
  },
  {
    name: 'host-keys',
    purpose: 'the signed-in node replaces its keys, proven by the old key and the new one',
    trigger: 'api',
    route: {
      method: 'POST',
      path: '/hosts/{node}/keys',
      auth: 'host',
      request: { path: nodePath, body: rotationBody },
    },
    // nodeKeys:verify and proofs:write for host authentication; keys:rotate for the switch.
    access: ['nodeKeys:verify', 'proofs:write', 'keys:rotate', 'control:send', 'audit:write'],
    handler: hostKeysHandler,
  },
  {
    name: 'host-authorizer',
    purpose: 'REQUEST authorizer for host routes: checks the proof of possession before a handler runs',
    trigger: 'authorizer',
    access: ['nodeKeys:verify'],
    handler: hostAuthorizerHandler,
  },
] as const satisfies readonly FunctionSpec[];
