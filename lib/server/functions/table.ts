import { apiDocumentHandler } from '../api/handlers/api-document.ts';
import { healthHandler } from '../api/handlers/health.ts';
import { agentReleaseFunctions } from './agent-releases.ts';
import { auditFunctions } from './audit.ts';
import { controlFunctions } from './control.ts';
import { enrolmentFunctions } from './enrolment.ts';
import { holdFunctions } from './holds.ts';
import { meshFunctions } from './mesh.ts';
import { rolloutFunctions } from './rollouts.ts';
import { signalFunctions } from './signal.ts';
import type {
  ApiFunctionSpec,
  FunctionSpec,
  HttpMethod,
  OperatorRole,
  RouteAuth,
  RouteRequest,
} from './spec.ts';
import { summaryFunctions } from './summary.ts';
import { viewFunctions } from './views.ts';

export type {
  Access,
  ApiFunctionSpec,
  FunctionSpec,
  HttpMethod,
  OperatorRole,
  RouteAuth,
  RouteRequest,
} from './spec.ts';

/**
 * Every Lambda function of Mesh, one row each (lib/functions/<area>.ts): the CDK builds one
 * function and one role per row, the API from the rows' routes, and the local runtime serves
 * the same rows in-process.
 */
export const functionSpecs = [
  {
    name: 'health',
    purpose: 'answers that the API is up',
    trigger: 'api',
    route: { method: 'GET', path: '/health', auth: 'none' },
    access: [],
    handler: healthHandler,
  },
  {
    name: 'api-document',
    purpose: 'answers the HTTP API as OpenAPI 3.1, docs/openapi.json',
    trigger: 'api',
    route: { method: 'GET', path: '/openapi.json', auth: 'none' },
    access: [],
    handler: apiDocumentHandler,
  },
  ...meshFunctions,
  ...enrolmentFunctions,
  ...controlFunctions,
  ...viewFunctions,
  ...signalFunctions,
  ...summaryFunctions,
  ...rolloutFunctions,
  ...holdFunctions,
  ...auditFunctions,
  ...agentReleaseFunctions,
] as const satisfies readonly FunctionSpec[];

/** A route of the HTTP API: a method and path, how it is authenticated, and the function that serves it. */
export type Route = {
  readonly method: HttpMethod;
  /** API Gateway resource path; `{name}` segments become path parameters. */
  readonly path: string;
  readonly auth: RouteAuth;
  /** Who among operators may call it (operator routes only; lib/server/functions/roles.ts). */
  readonly role?: OperatorRole;
  readonly bodyBytes?: number;
  /** The schemas its handler validates with (lib/server/functions/spec.ts). */
  readonly request?: RouteRequest;
  /** The function (functions/<handler>.ts) that serves it. */
  readonly handler: string;
};

export const routesOf = (specs: readonly FunctionSpec[]): Route[] =>
  specs
    .filter((spec): spec is ApiFunctionSpec => spec.trigger === 'api')
    .map((spec) => ({ ...spec.route, handler: spec.name }));

/** Every HTTP route, read by the local HTTP server and the CDK API construct alike. */
export const routes: readonly Route[] = routesOf(functionSpecs);
