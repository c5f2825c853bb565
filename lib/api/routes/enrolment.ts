import type { Route } from '../routes.ts';

/** The enrolment area's routes. */
export const enrolmentRoutes: readonly Route[] = [];
