import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { releaseArches, signedRelease } from '../../core/agent-release/release.ts';
import type { AgentReleases } from '../../core/agent-release/service.ts';
import { labelValue } from '../../core/mesh/labels.ts';
import { nodeName } from '../../core/names.ts';
import type { Log } from '../../core/ports.ts';
import { agentReleaseProblem } from '../agent-release-problems.ts';
import { actorOf } from '../caller.ts';
import { json, parseBody, validate } from '../http.ts';
import { httpEdge, type Refusing } from '../http-edge.ts';
import { type Proven, provenRoute } from './host.ts';

/**
 * The agent's releases (docs/http-api.md#agent-releases): publish one (its signed manifest; the
 * executable goes where the answer says, never through the API), list them, and a host's fetch
 * of one, answered with where to download the executable from.
 */
type Handler = (event: APIGatewayProxyEvent) => Promise<APIGatewayProxyResult>;
export type AgentReleaseDeps = { readonly agentReleases: AgentReleases; readonly log?: Log };

const edge = (deps: AgentReleaseDeps & Refusing, handler: Handler) =>
  middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: agentReleaseProblem, log: deps.log, refusals: deps.refusals }))
    .handler(handler);

export const publishBody = signedRelease;

export const hostReleasePath = z.strictObject({
  node: nodeName,
  version: labelValue,
  arch: z.enum(releaseArches),
});

/**
 * POST /agent/releases: 202 with the upload to make while the executable is not kept (nothing
 * written); 201 once it is and the release is stored, 200 when it was already.
 */
export const publishReleaseHandler = (deps: AgentReleaseDeps) =>
  edge(deps, async (event) => {
    const answer = await deps.agentReleases.publish(parseBody(event, publishBody), actorOf(event));
    if (answer.state === 'upload') return json(202, answer);
    return json(answer.stored ? 201 : 200, answer);
  });

/** GET /agent/releases: every release published, newest first. */
export const listReleasesHandler = (deps: AgentReleaseDeps) =>
  edge(deps, async () => json(200, { releases: await deps.agentReleases.list() }));

/** GET /hosts/{node}/releases/{version}/{arch}: the signed manifest and a download of the executable. */
export const hostReleaseHandler = (deps: AgentReleaseDeps & Proven) =>
  provenRoute(deps, 'proof-id', agentReleaseProblem).handler(async function fetchRelease(event) {
    const { version, arch } = validate(hostReleasePath, event.pathParameters ?? {}, 'path');
    return json(200, await deps.agentReleases.forHost(version, arch));
  });
