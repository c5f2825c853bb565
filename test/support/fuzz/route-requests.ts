import type * as z from 'zod';
import { hostReleasePath, publishBody } from '../../../lib/server/api/handlers/agent-releases.ts';
import { auditQuery, verifyQuery } from '../../../lib/server/api/handlers/audit.ts';
import {
  buildRequest,
  catchUpRequest,
  reportResetPath,
  retractRequest,
  upgradeRequest,
} from '../../../lib/server/api/handlers/control.ts';
import { enrolBody, issueTokenBody } from '../../../lib/server/api/handlers/enrolment.ts';
import { freezeBody, liftQuery } from '../../../lib/server/api/handlers/holds.ts';
import { reportPath, reportRequest } from '../../../lib/server/api/handlers/host.ts';
import {
  assignBody,
  consumeBody,
  moduleParams,
  nodeAddBody,
  nodeParams,
} from '../../../lib/server/api/handlers/mesh.ts';
import {
  applyBody,
  applyJobPath,
  exportQuery,
  planBody,
  uploadBody,
} from '../../../lib/server/api/handlers/mesh-file.ts';
import {
  assignmentPath,
  cascadeQuery,
  nodePath,
  relationPath,
  rotateBody,
} from '../../../lib/server/api/handlers/mesh-removals.ts';
import { idPath, pageQuery, showQuery } from '../../../lib/server/api/handlers/rollouts.ts';
import { limitQuery, pushPath } from '../../../lib/server/api/handlers/views.ts';
import { rotationBody } from '../../../lib/server/core/enrolment/rotation.ts';
import { pushRequestSchema } from '../../../lib/server/core/push/flow-schemas.ts';
import { rolloutRequest } from '../../../lib/server/core/rollout/requests.ts';
import { type Route, routes } from '../../../lib/server/functions/table.ts';

/** What a route validates, each part with the schema its handler validates it with. */
export type RouteRequest = {
  readonly path?: z.ZodType;
  readonly query?: z.ZodType;
  readonly body?: z.ZodType;
};

/**
 * Every route of lib/server/functions/table.ts by its function's name, with the schemas of its handler
 * (lib/api/handlers/*, lib/core/*). A route added without a line here fails the fuzz's own
 * test (`routesWithoutRequests`), so no route goes unfuzzed.
 */
export const routeRequests: Readonly<Record<string, RouteRequest>> = {
  health: {},
  'api-document': {},
  'agent-release-publish': { body: publishBody },
  'agent-release-list': {},
  'host-release': { path: hostReleasePath },
  'mesh-node-add': { body: nodeAddBody },
  'mesh-assign': { path: moduleParams, body: assignBody },
  'mesh-consume': { path: moduleParams, body: consumeBody },
  'mesh-unconsume': { path: relationPath },
  'mesh-unassign': { path: assignmentPath, query: cascadeQuery },
  'mesh-node-remove': { path: nodePath, query: cascadeQuery },
  'mesh-rotate': { path: relationPath, body: rotateBody },
  'mesh-push': { body: pushRequestSchema },
  'mesh-push-plan': { body: pushRequestSchema },
  'rollout-start': { body: rolloutRequest },
  'rollout-list': { query: pageQuery },
  'rollout-show': { path: idPath, query: showQuery },
  'rollout-resume': { path: idPath },
  'rollout-abort': { path: idPath },
  'rollout-undo': { path: idPath },
  freeze: { body: freezeBody },
  unfreeze: { query: liftQuery },
  'freeze-list': {},
  'mesh-status': {},
  'audit-list': { query: auditQuery },
  'audit-verify': { query: verifyQuery },
  'mesh-export': { query: exportQuery },
  'mesh-plan': { body: planBody },
  'mesh-apply': { body: applyBody },
  'mesh-apply-prune': { body: applyBody },
  'apply-job-show': { path: applyJobPath },
  'mesh-upload': { body: uploadBody },
  'mesh-declaration': { path: nodeParams },
  enrol: { body: enrolBody },
  'token-issue': { path: nodePath, body: issueTokenBody },
  'token-revoke': { path: nodePath },
  'node-disenrol': { path: nodePath },
  'host-declaration': { path: nodePath },
  'host-keys': { path: nodePath, body: rotationBody },
  'host-report': { path: reportPath, body: reportRequest },
  'control-build': { body: buildRequest },
  'control-upgrade': { body: upgradeRequest },
  'control-catch-up': { body: catchUpRequest },
  'control-build-retract': { body: retractRequest },
  'control-report-reset': { path: reportResetPath },
  'mesh-node-list': {},
  'mesh-node-show': { path: nodePath },
  'mesh-graph': {},
  'mesh-summary': {},
  'mesh-summary-rebuild': {},
  'mesh-pushes': { query: limitQuery(20) },
  'mesh-push-show': { path: pushPath },
  'control-dead-letters': { query: limitQuery(50) },
};

/** The routes of the table, each with its schemas. */
export const fuzzedRoutes = (): ReadonlyArray<Route & { readonly request: RouteRequest }> =>
  routes
    .filter((route) => routeRequests[route.handler] !== undefined)
    .map((route) => ({ ...route, request: routeRequests[route.handler] as RouteRequest }));

/** Routes the table serves that have no line above: each one is a route nobody fuzzes. */
export const routesWithoutRequests = (): string[] =>
  routes.filter((route) => routeRequests[route.handler] === undefined).map((route) => route.handler);

/** Routes of the same path: a method outside these is a wrong method there. */
export const methodsAt = (path: string): string[] =>
  routes.filter((route) => route.path === path).map((route) => route.method);
