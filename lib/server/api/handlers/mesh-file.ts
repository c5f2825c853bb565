import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import * as z from 'zod';
import { pageBytes, pageOfLists, pageOfText } from '../../core/answer-pages.ts';
import { meshErrors } from '../../core/mesh/errors.ts';
import { applyJobIdPattern } from '../../core/mesh-file/apply-job.ts';
import {
  type ApplyJobDeps,
  advanceApplyJob,
  applyOrStartJob,
  readApplyJob,
} from '../../core/mesh-file/apply-jobs.ts';
import { meshFileErrors, PruneNeedsAdminError } from '../../core/mesh-file/errors.ts';
import { boundedOutcome, ExportMovedError, planListPaths } from '../../core/mesh-file/pages.ts';
import { PlanChangedError, StalePlanError } from '../../core/mesh-file/plan-checks.ts';
import type { ApplyJobStore } from '../../core/mesh-file/ports.ts';
import { meshFileBodyBytes } from '../../core/mesh-file/read.ts';
import type { MeshFileService } from '../../core/mesh-file/service.ts';
import {
  planNamed,
  putUploadPart,
  sha256Pattern,
  startUpload,
  type UploadDeps,
  uploadIdPattern,
  uploadMaxBytes,
  uploadPartBodyBytes,
} from '../../core/mesh-file/uploads.ts';
import type { Log } from '../../core/ports.ts';
import { BadCursorError, InvalidRequestError } from '../../core/request-errors.ts';
import { storeErrors } from '../../core/unavailable.ts';
import { answerCursorAt, answerCursorOf, maxCursorChars } from '../answer-cursor.ts';
import { actorOf } from '../caller.ts';
import { json, parseBody, timeToAnswer, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { problemsFrom } from '../problem.ts';

/** The mesh as a file (docs/mesh-file.md): export, plan and apply, one factory per function of lib/server/functions/mesh.ts. */
type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;
export type MeshFileDeps = { readonly meshFiles: MeshFileService; readonly log?: Log } & UploadDeps;

const meshFileProblem = problemsFrom(meshFileErrors, meshErrors, storeErrors);
const edge = (deps: MeshFileDeps & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshFileProblem, log: deps.log, refusals: deps.refusals }))
    .handler(handler);

const format = z.enum(['yaml', 'json']);
const cursor = z.string().min(1).max(maxCursorChars);
export const exportQuery = z.object({ format: format.optional(), cursor: cursor.optional() }).strict();
const uploadId = z
  .string()
  .regex(uploadIdPattern, 'an upload id is 32 hex digits, as POST /mesh/uploads answers it');
const fileBody = z
  .object({
    /** The file itself, or `upload`: the id of an upload of it (POST /mesh/uploads), one of them. */
    file: z.string().optional(),
    upload: uploadId.optional(),
    /** Informational: the file's own text says which it is (JSON is YAML). */
    format: format.optional(),
    prune: z.boolean().optional(),
    allowMassRemoval: z.boolean().optional(),
  })
  .strict();
const oneFile = <Body extends { file?: string | undefined; upload?: string | undefined }>(body: Body) =>
  (body.file === undefined) !== (body.upload === undefined);
const oneFileSays = { message: 'give the file or the upload that holds it, one of them', path: ['file'] };
/** The next page of a plan is asked with the same body and the page's `next` as `cursor`. */
export const planBody = fileBody.extend({ cursor: cursor.optional() }).strict().refine(oneFile, oneFileSays);
export const applyBody = fileBody
  .extend({
    revision: z.string().min(1).max(64).optional(),
    digest: z.string().min(1).max(64).optional(),
  })
  .strict()
  .refine(oneFile, oneFileSays);
/** The file or its upload, as the core takes them. */
const named = <Body extends { file?: string | undefined; upload?: string | undefined }>({
  file,
  upload,
  ...rest
}: Body) => ({ ...rest, ...(file !== undefined ? { file } : { upload: upload as string }) });

/** Kept back from the request's time for the answer (a plan of 10,000 nodes is a few hundred KB). */
const answerMarginMs = 3_000;

/**
 * GET /mesh/export?format=yaml|json[&cursor=C]: the file a page at a time, each page its text
 * from the cursor's place (whole lines) up to the page's bytes; every page of one revision.
 */
export const meshExportHandler = (deps: MeshFileDeps) =>
  edge(deps, async (event) => {
    const query = validate(exportQuery, event.queryStringParameters ?? {}, 'query');
    const chosen = query.format ?? 'yaml';
    const at = query.cursor === undefined ? undefined : answerCursorAt(query.cursor, 'export');
    if (at && at.what !== chosen) throw new BadCursorError();
    const { text, revision } = await deps.meshFiles.export(chosen);
    if (at && at.revision !== revision) throw new ExportMovedError(at.revision, revision);
    if (at && at.at >= text.length) throw new BadCursorError();
    const { chunk, next } = pageOfText(text, at?.at ?? 0, pageBytes);
    const more =
      next === null ? {} : { next: answerCursorOf({ of: 'export', revision, what: chosen, at: next }) };
    return json(200, { format: chosen, revision, file: chunk, ...more }, { 'mesh-revision': revision });
  });

/**
 * POST /mesh/plan: the plan of a file against the live mesh, a page at a time (its lists cut,
 * its other fields on every page); writes nothing. A later page is planned again and must be the
 * same plan: the mesh at the same revision (else 409 stale_plan), the file planning the same digest.
 */
export const meshPlanHandler = (deps: MeshFileDeps) =>
  edge(deps, async (event) => {
    const { cursor: asked, ...body } = parseBody(event, planBody, meshFileBodyBytes);
    const at = asked === undefined ? undefined : answerCursorAt(asked, 'plan');
    const { plan } = await planNamed(deps, { ...named(body), by: actorOf(event) });
    if (at && at.revision !== plan.revision) throw new StalePlanError(at.revision, plan.revision);
    if (at && at.what !== plan.digest) throw new PlanChangedError(at.what, plan.digest);
    const { page, next, total } = pageOfLists(plan, planListPaths, at?.at ?? 0, pageBytes);
    if (at && at.at >= total) throw new BadCursorError();
    const { revision, digest } = plan;
    const more =
      next === null ? {} : { next: answerCursorOf({ of: 'plan', revision, what: digest, at: next }) };
    return json(200, { ...page, ...more }, { 'mesh-revision': plan.revision });
  });

/**
 * POST /mesh/apply and POST /mesh/apply/prune: plans and applies what fits the request's time.
 * When that is not all, the rest goes on as an apply job (docs/mesh-file.md, "An apply as a
 * job"): the answer says `complete: false` with the part's progress and the job's id, and the
 * apply flow carries on.
 *
 * A prune removes nodes as `DELETE /nodes/{node}` does, and a node applied again after is a new,
 * unenrolled one: a disenrolment. Both are an admin's, so a prune has a route of its own, with
 * the admin's role (lib/server/functions/mesh.ts): on AWS IAM refuses it to an operator before the
 * function runs, and the operator's route refuses `prune` in its body before anything is read.
 */
const applyHandler = (deps: MeshFileDeps & Omit<ApplyJobDeps, 'meshFiles'>, route: 'apply' | 'prune') =>
  edge(deps, async (event, context) => {
    const body = parseBody(event, applyBody, meshFileBodyBytes);
    if (route === 'apply' && body.prune === true) throw new PruneNeedsAdminError();
    if (route === 'prune' && body.prune === false)
      throw new InvalidRequestError(
        'POST /mesh/apply/prune prunes: leave prune out, or apply without it on POST /mesh/apply',
      );
    const timed = typeof context?.getRemainingTimeInMillis === 'function';
    const until = timed
      ? Date.now() + Math.max(1_000, timeToAnswer(event, context) - answerMarginMs)
      : undefined;
    const { outcome, job, interrupted } = await applyOrStartJob(deps, {
      ...named(body),
      prune: route === 'prune',
      ...(until ? { until } : {}),
      by: actorOf(event),
    });
    // an uploaded file handed whole to its job: the flow plans it
    if (!outcome) return json(202, { complete: false, job });
    return json(
      200,
      {
        ...boundedOutcome(outcome, pageBytes),
        ...(job ? { job } : {}),
        ...(interrupted ? { interrupted } : {}),
      },
      { 'mesh-revision': outcome.plan.revision },
    );
  });

/** POST /mesh/apply: the operator's apply, which adds and changes and never removes. */
export const meshApplyHandler = (deps: MeshFileDeps & Omit<ApplyJobDeps, 'meshFiles'>) =>
  applyHandler(deps, 'apply');

/** POST /mesh/apply/prune: the admin's apply, which also removes what the file does not hold. */
export const meshApplyPruneHandler = (deps: MeshFileDeps & Omit<ApplyJobDeps, 'meshFiles'>) =>
  applyHandler(deps, 'prune');

const sha256 = z.string().regex(sha256Pattern, 'a SHA-256 is 64 lowercase hex digits');
/** An upload started: the file's size and SHA-256. */
const uploadStart = z.strictObject({
  bytes: z
    .number()
    .int()
    .min(1)
    .max(uploadMaxBytes * 2),
  sha256,
});
/** One part of an upload: its number (from 1), its bytes base64 (JSON never escapes them, so the request's size is known) and their SHA-256. */
const uploadPart = z.strictObject({
  upload: uploadId,
  part: z.number().int().min(1).max(100_000),
  data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64'),
  sha256,
});
export const uploadBody = z.union([uploadStart, uploadPart]);

/**
 * POST /mesh/uploads: a mesh file too large for one request, in parts (docs/mesh-file.md, "Large
 * files"). `{bytes, sha256}` starts an upload (201, its id and how its parts are cut); `{upload,
 * part, data, sha256}` keeps one part when its bytes have the SHA-256 sent with them. One route
 * for both: a stack holds at most 500 resources, and a route costs a function and its own.
 */
export const meshUploadHandler = (deps: UploadDeps & { readonly log?: Log } & Refusing) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshFileProblem, log: deps.log, refusals: deps.refusals }))
    .handler(async (event) => {
      const body = parseBody(event, uploadBody, uploadPartBodyBytes);
      if ('upload' in body) {
        const data = Buffer.from(body.data, 'base64');
        return json(200, await putUploadPart(deps, { ...body, id: body.upload, data, by: actorOf(event) }));
      }
      const { by: _by, ...upload } = await startUpload(deps, { ...body, by: actorOf(event) });
      return json(201, upload);
    });

export const applyJobPath = z.strictObject({
  id: z.string().regex(applyJobIdPattern, 'an apply job id looks like 20260722T101500123Z-4f2a9c'),
});

/** GET /mesh/apply-jobs/{id}: an apply job's record, without its file. */
export const applyJobShowHandler = (
  deps: { readonly applyJobs: ApplyJobStore; readonly log?: Log } & Refusing,
) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: meshFileProblem, log: deps.log, refusals: deps.refusals }))
    .handler(async (event) => {
      const { id } = validate(applyJobPath, event.pathParameters, 'path');
      // the kept plan's slices are the flow's bookkeeping: `progress` says what remains
      const { stored: _slices, ...shown } = await readApplyJob(deps, id);
      return json(200, shown);
    });

/** The apply flow's Task (lib/server/flows/apply.asl.json): the next part of a job, in the invocation's time. */
export const meshApplyAdvanceHandler =
  (deps: Omit<ApplyJobDeps, 'applyFlow' | 'meshUploads'> & { readonly log: Log }) =>
  (input: unknown, context?: Pick<Context, 'getRemainingTimeInMillis'>) =>
    advanceApplyJob(deps, input, context?.getRemainingTimeInMillis?.() ?? advanceWithoutContextMs);

/** A part's time when no invocation says how much it has (a test calling the handler bare). */
const advanceWithoutContextMs = 60_000;
