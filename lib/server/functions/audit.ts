import { auditListHandler, auditQuery, auditVerifyHandler, verifyQuery } from '../api/handlers/audit.ts';
import type { FunctionSpec } from './spec.ts';

/** The audit trail read back (docs/audit.md): reads only, a viewer's. */
export const auditFunctions = [
  {
    name: 'audit-list',
    purpose: 'the audit trail, newest first, by node, actor, action, since',
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/audit',
      auth: 'operator',
      role: 'viewer',
      request: { query: auditQuery },
    },
    access: ['audit:read'],
    timeoutSeconds: 29,
    handler: auditListHandler,
  },
  {
    name: 'audit-verify',
    purpose: "checks the audit trail's hash chains, naming a record removed, altered, reordered or hidden",
    trigger: 'api',
    route: {
      method: 'GET',
      path: '/audit/verify',
      auth: 'operator',
      role: 'viewer',
      request: { query: verifyQuery },
    },
    // a verify that finds records which do not check tells it (audit.unverified)
    access: ['audit:read', 'events:put'],
    timeoutSeconds: 29,
    handler: auditVerifyHandler,
  },
] as const satisfies readonly FunctionSpec[];
