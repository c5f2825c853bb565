import type { Route } from '../routes.ts';

/** The control area's routes. */
export const controlRoutes: readonly Route[] = [];
