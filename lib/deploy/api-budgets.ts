import type { MethodDeploymentOptions } from 'aws-cdk-lib/aws-apigateway';
import type { Route } from '../server/functions/table.ts';

/** API Gateway's token bucket: `burstLimit` requests at once, refilled at `rateLimit` a second. */
export type Throttle = { readonly rateLimit: number; readonly burstLimit: number };

/**
 * One budget per kind of caller (a route's `auth`). API Gateway keeps a bucket per method, so
 * each method gets its kind's budget: a flood of hosts' requests, real or forged, empties host
 * methods' buckets and never an operator's, and the reverse. Nothing is set on the stage as a
 * whole, so no bucket is shared across kinds; what all APIs of the account share is the
 * account's own limit (10,000 requests a second per region by default).
 */
export type RouteBudgets = { readonly [auth in Route['auth']]: Throttle };

export const defaultRouteBudgets: RouteBudgets = {
  // people and their scripts, and the console's reads every few seconds
  operator: { rateLimit: 20, burstLimit: 40 },
  // a whole fleet fetching and reporting after a push
  host: { rateLimit: 100, burstLimit: 200 },
  // POST /enrol: a token is guessed or replayed here; per address, the firewall limits it further
  token: { rateLimit: 5, burstLimit: 10 },
  // GET /health
  none: { rateLimit: 5, burstLimit: 10 },
};

/** The budgets with `given` in place of the defaults it names. */
export function routeBudgets(given: Partial<RouteBudgets> = {}): RouteBudgets {
  return { ...defaultRouteBudgets, ...given };
}

export function budgetProblems(budgets: RouteBudgets): string[] {
  return Object.entries(budgets).flatMap(([auth, throttle]) =>
    throttle.rateLimit > 0 && throttle.burstLimit >= 1 && Number.isInteger(throttle.burstLimit)
      ? []
      : [`budgets.${auth} needs a positive rateLimit and a whole burstLimit of at least 1`],
  );
}

/** The stage's method settings: every route's method with its kind's budget. */
export function methodBudgets(
  routes: readonly Route[],
  budgets: RouteBudgets,
): Record<string, MethodDeploymentOptions> {
  return Object.fromEntries(
    routes.map((route) => {
      const budget = budgets[route.auth];
      return [
        `${route.path}/${route.method}`,
        { throttlingRateLimit: budget.rateLimit, throttlingBurstLimit: budget.burstLimit },
      ];
    }),
  );
}
