import type { Route } from '../routes.ts';

/** The enrolment area's routes (README: "Enrolment"). */
export const enrolmentRoutes: readonly Route[] = [
  { method: 'POST', path: '/enrol', handler: 'enrol', auth: 'token' },
  { method: 'POST', path: '/nodes/{node}/token', handler: 'token-issue', auth: 'operator' },
  { method: 'DELETE', path: '/nodes/{node}/token', handler: 'token-revoke', auth: 'operator' },
  { method: 'GET', path: '/hosts/{node}/declaration', handler: 'host-declaration', auth: 'host' },
];
