import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { envelope } from '../../core/control/messages.ts';
import type { ControlSender } from '../../core/control/ports.ts';
import { json, parseBody } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { mapControlError, queueOne } from './control-queueing.ts';

/** POST /catch-up (operator): asks the consumer to re-announce every module's latest successful build. */
export function createControlCatchUpHandler(deps: { sender: ControlSender; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: mapControlError }))
    .handler(async (event) => {
      parseBody(event, z.strictObject({}));
      const queued = await queueOne(deps.sender, { message: envelope('catch-up', {}, now()) });
      return json(202, { queued });
    });
}
