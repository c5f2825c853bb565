import { randomBytes } from 'node:crypto';
import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { buildResults, envelope } from '../../core/control/messages.ts';
import type { ControlSender } from '../../core/control/ports.ts';
import { buildId, moduleName, moduleVersion } from '../../core/names.ts';
import { json, parseBody } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { mapControlError, queueOne } from './control-queueing.ts';

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

/** POST /builds (operator): puts a build result on the control queue under `build:<id>`. */
export function createControlBuildHandler(deps: { sender: ControlSender; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: mapControlError }))
    .handler(async (event) => {
      const request = parseBody(event, buildRequest);
      const body = {
        id:
          request.id ?? `${request.module}-${request.version}-${randomBytes(4).toString('hex')}`.slice(0, 64),
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
}
