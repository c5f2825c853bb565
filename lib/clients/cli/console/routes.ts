/**
 * The routes the console reads, all GET: what `mesh console` forwards and nothing else. Kept
 * here, apart from the function table, so the CLI does not carry the control plane's handlers;
 * test/unit/console-pages.test.ts holds it to the GET routes of lib/server/functions/views.ts,
 * lib/server/functions/summary.ts, lib/server/functions/rollouts.ts and lib/server/functions/audit.ts.
 */
export const consoleReadRoutes: readonly string[] = [
  '/nodes',
  '/nodes/{node}',
  '/graph',
  '/pushes',
  '/pushes/{push}',
  '/dead-letters',
  '/summary',
  '/rollouts',
  '/rollouts/{id}',
  '/audit',
  '/audit/verify',
];
