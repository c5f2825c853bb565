import { randomBytes } from 'node:crypto';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { buildResults, envelope } from '../../core/control/messages.ts';
import type { ControlSender, Outgoing, Queued } from '../../core/control/ports.ts';
import { buildId, moduleName, moduleVersion } from '../../core/names.ts';
import { StoreUnavailableError } from '../../core/unavailable.ts';
import type { Parts } from '../../wiring.ts';
import { json, parseBody } from '../http.ts';
import { httpEdge } from '../http-edge.ts';

/** The operator's control routes: each puts one message on the control queue and answers 202. */
type Deps = Pick<Parts, 'sender'> & Partial<Pick<Parts, 'log' | 'now'>>;
type Handler = (event: APIGatewayProxyEvent, now: () => Date) => Promise<APIGatewayProxyResult>;

const edge = (deps: Deps, handler: Handler) => {
  const now = deps.now ?? (() => new Date());
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ log: deps.log }))
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

export const upgradeRequest = z.strictObject({ module: moduleName, version: moduleVersion });
export const catchUpRequest = z.strictObject({});

/** POST /builds: a build result under `build:<id>`. */
export const controlBuildHandler = (deps: Deps) =>
  edge(deps, async (event, now) => {
    const request = parseBody(event, buildRequest);
    const body = {
      id: request.id ?? `${request.module}-${request.version}-${randomBytes(4).toString('hex')}`.slice(0, 64),
      module: request.module,
      version: request.version,
      result: request.result ?? 'succeeded',
      finishedAt: request.finishedAt ?? now().toISOString(),
    } as const;
    // A retried request for the same build id is one message; the consumer keeps it once anyway.
    const queued = await queueOne(deps.sender, {
      message: envelope('build', body, now()),
      deduplicationId: `build-${body.id}`,
    });
    return json(202, { queued, build: body });
  });

/** POST /upgrades: an upgrade under `upgrade:<module>`. */
export const controlUpgradeHandler = (deps: Deps) =>
  edge(deps, async (event, now) => {
    const body = parseBody(event, upgradeRequest);
    const queued = await queueOne(deps.sender, { message: envelope('upgrade', body, now()) });
    return json(202, { queued, upgrade: body });
  });

/** POST /catch-up: asks the consumer to re-announce every module's latest successful build. */
export const controlCatchUpHandler = (deps: Deps) =>
  edge(deps, async (event, now) => {
    parseBody(event, catchUpRequest);
    const queued = await queueOne(deps.sender, { message: envelope('catch-up', {}, now()) });
    return json(202, { queued });
  });

/** Puts one message on the control queue and says what was queued. */
export async function queueOne(sender: ControlSender, outgoing: Outgoing): Promise<Queued> {
  const [queued] = await sender.send([outgoing]);
  if (!queued) throw new StoreUnavailableError('putting a message on the control queue');
  return queued;
}
