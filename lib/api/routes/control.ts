import type { Route } from '../routes.ts';

/** The control area's routes: each puts a message on the control queue and answers 202. */
export const controlRoutes: readonly Route[] = [
  { method: 'POST', path: '/hosts/{node}/reports', handler: 'host-report', auth: 'host' },
  { method: 'POST', path: '/builds', handler: 'control-build', auth: 'operator' },
  { method: 'POST', path: '/upgrades', handler: 'control-upgrade', auth: 'operator' },
  { method: 'POST', path: '/catch-up', handler: 'control-catch-up', auth: 'operator' },
];
