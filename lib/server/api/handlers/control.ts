import { randomBytes } from 'node:crypto';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { checkBuildTimes } from '../../core/control/bounds.ts';
import { buildResults, envelope } from '../../core/control/messages.ts';
import type { BuildStore, ControlSender, Outgoing, Queued, ReportStore } from '../../core/control/ports.ts';
import { ModuleNotFoundError } from '../../core/mesh/errors.ts';
import type { ModuleVersions } from '../../core/mesh/ports.ts';
import { buildId, moduleName, moduleVersion, nodeName } from '../../core/names.ts';
import type { Clock, Log } from '../../core/ports.ts';
import { optionsOf, type WaveRequest, waveFields } from '../../core/rollout/requests.ts';
import { newRolloutId } from '../../core/rollout/service.ts';
import { StoreUnavailableError } from '../../core/unavailable.ts';
import { actorOf } from '../caller.ts';
import { controlProblem } from '../control-problems.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { meshProblem } from '../mesh-problems.ts';
import { rolloutProblem } from '../rollout-problems.ts';

/**
 * The operator's control routes: build, upgrade and catch-up each put one message on the
 * control queue and answer 202; a report reset and a build retraction change the store at once.
 * Domain errors become answers in lib/server/api/control-problems.ts.
 */
type Timed = { readonly log?: Log; readonly now?: Clock };
export type ControlSendDeps = { readonly sender: ControlSender } & Timed;
type Deps = ControlSendDeps;
type Handler = (event: APIGatewayProxyEvent, now: () => Date) => Promise<APIGatewayProxyResult>;

const edge = (deps: Timed & Refusing, handler: Handler) => {
  const now = deps.now ?? (() => new Date());
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(
      httpEdge({
        mapError: (error) => controlProblem(error) ?? rolloutProblem(error) ?? meshProblem(error),
        log: deps.log,
        refusals: deps.refusals,
      }),
    )
    .handler((event) => handler(event, now));
};

export const buildRequest = z.strictObject({
  module: moduleName,
  version: moduleVersion,
  /** @default `<module>-<version>-<8 hex>` */
  id: buildId.optional(),
  /** @default 'succeeded' */
  result: z.enum(buildResults).optional(),
  /** @default now */
  finishedAt: z.iso.datetime({ offset: true }).optional(),
});

const partialWaves = { ...waveFields, waves: waveFields.waves.optional() };
export const upgradeRequest = z.strictObject({
  module: moduleName,
  version: moduleVersion,
  /** In waves (docs/decisions/rollouts-in-waves.md): the consumer starts a rollout instead of a push. */
  ...partialWaves,
});
export const catchUpRequest = z.strictObject({});

/** POST /builds: a build result under `build:<id>`. */
export const controlBuildHandler = (deps: Deps) =>
  edge(deps, async (event, now) => {
    const request = parseBody(event, buildRequest);
    const receivedAt = now();
    const body = {
      id: request.id ?? `${request.module}-${request.version}-${randomBytes(4).toString('hex')}`.slice(0, 64),
      module: request.module,
      version: request.version,
      result: request.result ?? 'succeeded',
      finishedAt: request.finishedAt ?? receivedAt.toISOString(),
    } as const;
    checkBuildTimes(body, receivedAt, receivedAt);
    // A retried request for the same build id is one message; the consumer keeps it once anyway.
    const queued = await queueOne(deps.sender, {
      message: envelope('build', body, receivedAt, actorOf(event)),
      deduplicationId: `build-${body.id}`,
    });
    return json(202, { queued, build: body });
  });

/**
 * POST /upgrades: an upgrade under `upgrade:<module>`. A module no node was ever assigned is
 * refused here (404 module_not_found), not queued to be refused where nobody sees it.
 */
export const controlUpgradeHandler = (
  deps: Deps & { readonly moduleVersions: Pick<ModuleVersions, 'isKnown'> },
) =>
  edge(deps, async (event, now) => {
    const { module, version, ...waves } = parseBody(event, upgradeRequest);
    if (!(await deps.moduleVersions.isKnown(module))) throw new ModuleNotFoundError(module);
    const at = now();
    const rollout =
      waves.waves === undefined
        ? undefined
        : { id: newRolloutId(at), ...checkedWaves({ ...waves, waves: waves.waves }) };
    const body = { module, version, ...(rollout ? { rollout } : {}) };
    const queued = await queueOne(deps.sender, { message: envelope('upgrade', body, at, actorOf(event)) });
    return json(202, { queued, upgrade: { module, version }, ...(rollout ? { rollout: rollout.id } : {}) });
  });

/** The wave options as asked, once they are known to read (a RolloutUsageError is the 400 it would be on /rollouts). */
function checkedWaves(waves: WaveRequest): WaveRequest {
  optionsOf(waves);
  return waves;
}

/** POST /catch-up: asks the consumer to re-announce every module's latest successful build. */
export const controlCatchUpHandler = (deps: Deps) =>
  edge(deps, async (event, now) => {
    parseBody(event, catchUpRequest);
    const queued = await queueOne(deps.sender, {
      message: envelope('catch-up', {}, now(), actorOf(event)),
    });
    return json(202, { queued });
  });

export const retractRequest = z.strictObject({ module: moduleName, version: moduleVersion });

/**
 * POST /builds/retractions: retracts a version of a module for good. Answers the retraction and
 * the module's latest build now, which the next catch-up announces; 404 `build_not_found` when
 * no successful build of that version was recorded.
 */
export const controlBuildRetractHandler = (deps: { readonly builds: BuildStore } & Timed) =>
  edge(deps, async (event, now) => {
    const { module, version } = parseBody(event, retractRequest);
    const { latest, ...retracted } = await deps.builds.retractBuild(
      module,
      version,
      now().toISOString(),
      actorOf(event),
    );
    return json(200, { retracted, latest });
  });

export const reportResetPath = z.object({ node: nodeName });

/**
 * DELETE /nodes/{node}/report: forgets the node's kept report, so its host's next report is
 * recorded whatever its sequence. Answers the report forgotten, or null; 404 `node_not_found`.
 */
export const controlReportResetHandler = (deps: { readonly reports: ReportStore } & Timed) =>
  edge(deps, async (event) => {
    const { node } = validate(reportResetPath, event.pathParameters ?? {}, 'path');
    const reset = await deps.reports.resetReport(node, actorOf(event));
    return json(200, { node, reset: reset ?? null });
  });

/** Puts one message on the control queue and says what was queued. */
export async function queueOne(sender: ControlSender, outgoing: Outgoing): Promise<Queued> {
  const [queued] = await sender.send([outgoing]);
  if (!queued) throw new StoreUnavailableError('putting a message on the control queue');
  return queued;
}
