import type { Route } from '../routes.ts';

/** The mesh area's routes. */
export const meshRoutes: readonly Route[] = [];
