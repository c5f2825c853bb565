import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import * as z from 'zod';
import { meshErrors } from '../../core/mesh/errors.ts';
import { meshFileErrors } from '../../core/mesh-file/errors.ts';
import type { MeshFileService } from '../../core/mesh-file/service.ts';
import type { Log } from '../../core/ports.ts';
import { storeErrors } from '../../core/unavailable.ts';
import { json, meshFileBodyBytes, parseBody, timeToAnswer, validate } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { problemsFrom } from '../problem.ts';

/** The mesh as a file (docs/mesh-file.md): export, plan and apply, one factory per function of lib/functions/mesh.ts. */
type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type MeshFileDeps = { readonly meshFiles: MeshFileService; readonly log?: Log };

const meshFileProblem = problemsFrom(meshFileErrors, meshErrors, storeErrors);
const edge = (deps: MeshFileDeps, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshFileProblem, log: deps.log }))
    .handler(handler);

const format = z.enum(['yaml', 'json']);
export const exportQuery = z.object({ format: format.optional() }).strict();
export const planBody = z
  .object({
    file: z.string(),
    /** Informational: the file's own text says which it is (JSON is YAML). */
    format: format.optional(),
    prune: z.boolean().optional(),
    allowMassRemoval: z.boolean().optional(),
  })
  .strict();
export const applyBody = planBody
  .extend({
    revision: z.string().min(1).max(64).optional(),
    digest: z.string().min(1).max(64).optional(),
  })
  .strict();

/** Kept back from the request's time for the answer (a plan of 10,000 nodes is a few hundred KB). */
const answerMarginMs = 3_000;

/** GET /mesh/export?format=yaml|json */
export const meshExportHandler = (deps: MeshFileDeps) =>
  edge(deps, async (event) => {
    const query = validate(exportQuery, event.queryStringParameters ?? {}, 'query');
    const chosen = query.format ?? 'yaml';
    const { text, revision } = await deps.meshFiles.export(chosen);
    return json(200, { format: chosen, revision, file: text }, { 'mesh-revision': revision });
  });

/** POST /mesh/plan: the plan of a file against the live mesh; writes nothing. */
export const meshPlanHandler = (deps: MeshFileDeps) =>
  edge(deps, async (event) => {
    const body = parseBody(event, planBody, meshFileBodyBytes);
    const { plan } = await deps.meshFiles.plan(body);
    return json(200, plan, { 'mesh-revision': plan.revision });
  });

/**
 * POST /mesh/apply: plans and applies. What does not fit the request's time is left, and the
 * answer says so (`complete: false`): the next request plans the rest from the mesh as it is then.
 */
export const meshApplyHandler = (deps: MeshFileDeps) =>
  edge(deps, async (event, context) => {
    const body = parseBody(event, applyBody, meshFileBodyBytes);
    const timed = typeof context?.getRemainingTimeInMillis === 'function';
    const until = timed
      ? Date.now() + Math.max(1_000, timeToAnswer(event, context) - answerMarginMs)
      : undefined;
    const outcome = await deps.meshFiles.apply({ ...body, ...(until ? { until } : {}) });
    return json(200, outcome, { 'mesh-revision': outcome.plan.revision });
  });
