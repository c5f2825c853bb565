import middy from '@middy/core';
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import * as z from 'zod';
import { envelope } from '../../core/control/messages.ts';
import type { ControlSender } from '../../core/control/ports.ts';
import { moduleName, moduleVersion } from '../../core/names.ts';
import { json, parseBody } from '../http.ts';
import { httpEdge } from '../http-edge.ts';
import { mapControlError, queueOne } from './control-queueing.ts';

export const upgradeRequest = z.strictObject({ module: moduleName, version: moduleVersion });

/** POST /upgrades (operator): puts an upgrade on the control queue under `upgrade:<module>`. */
export function createControlUpgradeHandler(deps: { sender: ControlSender; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  return middy<APIGatewayProxyEvent, APIGatewayProxyResult>()
    .use(httpEdge({ mapError: mapControlError }))
    .handler(async (event) => {
      const body = parseBody(event, upgradeRequest);
      const queued = await queueOne(deps.sender, { message: envelope('upgrade', body, now()) });
      return json(202, { queued, upgrade: body });
    });
}
